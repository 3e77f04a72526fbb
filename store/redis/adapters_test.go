package redis_test

// What these tests open through the registries.
import (
	_ "github.com/amnesia-dev/amnesia/lineage/sqliteledger"
	_ "github.com/amnesia-dev/amnesia/store/sqlitedoc"
)
