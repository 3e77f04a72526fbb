package main

// The composition root: every ledger backend the benchmarks
// can open. Each registers itself
// (lineage.RegisterBackend); the packages below the command import none of
// them, so a library user links only the ones it imports.
import (
	_ "github.com/amnesia-dev/amnesia/lineage/pgledger"
	_ "github.com/amnesia-dev/amnesia/lineage/sqliteledger"
)
