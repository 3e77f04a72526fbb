// Package sqliteledger is the embedded lineage ledger: one SQLite file
// (cgo, github.com/mattn/go-sqlite3), the default. Importing it registers
// the "sqlite" backend, which lineage.Open uses for every spec that is not a
// PostgreSQL URL:
//
//	import _ "github.com/amnesia-dev/amnesia/lineage/sqliteledger"
//
// Its Ledger implements lineage.Ledger, lineage.Queue (claims serialised by
// the database's write lock: several processes on one host),
// lineage.EventLog, lineage.ErasureReader and transparency.Store.
package sqliteledger
