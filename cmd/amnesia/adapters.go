package main

// The composition root: every store adapter and ledger backend the amnesia
// command can open. Each registers itself (store.Register,
// lineage.RegisterBackend); the packages below the command import none of
// them, so a library user links only the ones it imports.
import (
	_ "github.com/amnesia-dev/amnesia/lineage/pgledger"
	_ "github.com/amnesia-dev/amnesia/lineage/sqliteledger"
	_ "github.com/amnesia-dev/amnesia/store/chroma"
	_ "github.com/amnesia-dev/amnesia/store/chromem"
	_ "github.com/amnesia-dev/amnesia/store/file"
	_ "github.com/amnesia-dev/amnesia/store/pgdoc"
	_ "github.com/amnesia-dev/amnesia/store/pgvector"
	_ "github.com/amnesia-dev/amnesia/store/pinecone"
	_ "github.com/amnesia-dev/amnesia/store/redis"
	_ "github.com/amnesia-dev/amnesia/store/sqlitedoc"
	_ "github.com/amnesia-dev/amnesia/store/sqlitevec"
	_ "github.com/amnesia-dev/amnesia/store/weaviate"
)
