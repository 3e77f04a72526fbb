package model_test

import (
	_ "github.com/amnesia-dev/amnesia/lineage/pgledger"
	_ "github.com/amnesia-dev/amnesia/lineage/sqliteledger"
	_ "github.com/amnesia-dev/amnesia/store/file"
	_ "github.com/amnesia-dev/amnesia/store/sqlitedoc"
)
