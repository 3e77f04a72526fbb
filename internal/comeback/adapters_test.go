package comeback_test

// What these tests open through the registries.
import (
	_ "github.com/amnesia-dev/amnesia/lineage/pgledger"
	_ "github.com/amnesia-dev/amnesia/lineage/sqliteledger"
	_ "github.com/amnesia-dev/amnesia/store/pgdoc"
	_ "github.com/amnesia-dev/amnesia/store/sqlitedoc"
)
