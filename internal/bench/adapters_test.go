package bench

// What these tests open through the registries (amnesia.yaml store types,
// lineage.Open): the command imports them in cmd/amnesia/adapters.go, a
// test imports what it uses.
import (
	_ "github.com/amnesia-dev/amnesia/lineage/pgledger"
	_ "github.com/amnesia-dev/amnesia/lineage/sqliteledger"
	_ "github.com/amnesia-dev/amnesia/store/chromem"
	_ "github.com/amnesia-dev/amnesia/store/file"
	_ "github.com/amnesia-dev/amnesia/store/pgdoc"
	_ "github.com/amnesia-dev/amnesia/store/pgvector"
	_ "github.com/amnesia-dev/amnesia/store/redis"
	_ "github.com/amnesia-dev/amnesia/store/sqlitedoc"
	_ "github.com/amnesia-dev/amnesia/store/sqlitevec"
	_ "github.com/amnesia-dev/amnesia/store/weaviate"
)
