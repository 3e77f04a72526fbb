package service_test

// What these tests open through the registries: the command imports them in
// cmd/amnesia/adapters.go, a test imports what it uses.
import (
	_ "github.com/amnesia-dev/amnesia/lineage/pgledger"
	_ "github.com/amnesia-dev/amnesia/lineage/sqliteledger"
	_ "github.com/amnesia-dev/amnesia/store/sqlitedoc"
)
