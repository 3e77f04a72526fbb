// Package pgledger is the lineage ledger in a PostgreSQL database (pgx),
// shared by any number of amnesia processes on any hosts. Importing it
// registers the "postgres" backend, which lineage.Open uses for a
// postgres:// or postgresql:// URL:
//
//	import _ "github.com/amnesia-dev/amnesia/lineage/pgledger"
//
// Its semantics and its hash chain are those of lineage/sqliteledger. Its
// Ledger implements lineage.Ledger, lineage.Queue (claims use SELECT … FOR
// UPDATE SKIP LOCKED), lineage.EventLog, lineage.ErasureReader,
// lineage.SubjectLocker, lineage.ErasureRecords (the erasures' journals,
// sealed evidence, traces and certificates, so that hosts share nothing
// but the database: records.go) and transparency.Store. It links no cgo.
package pgledger
