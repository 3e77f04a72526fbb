package capture_test

// The ledger backends these tests open through lineage.Open: the command
// imports them in cmd/amnesia/adapters.go, a test imports what it uses.
import (
	_ "github.com/amnesia-dev/amnesia/lineage/pgledger"
	_ "github.com/amnesia-dev/amnesia/lineage/sqliteledger"
)
