//go:build faiss

package faiss_test

// What these tests open through the registries (amnesia.yaml store types,
// lineage.Open): a test imports what it uses; the command imports every
// adapter in cmd/amnesia/adapters.go.
import (
	_ "github.com/amnesia-dev/amnesia/lineage/sqliteledger"
	_ "github.com/amnesia-dev/amnesia/store/sqlitedoc"
)
