package capture_test

// The code of docs/integrate.md. Each region between "integrate:begin" and
// "integrate:end" is one ```go block of that page, byte for byte
// (TestIntegrateDocMatchesCode); integrate_test.go runs it.

// integrate:begin
import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/amnesia-dev/amnesia/capture"
	"github.com/amnesia-dev/amnesia/certificate"

	// The ledger backend and the store adapters amnesia.yaml names. Each
	// registers itself when imported; the amnesia packages import none.
	_ "github.com/amnesia-dev/amnesia/lineage/sqliteledger"
	_ "github.com/amnesia-dev/amnesia/store/sqlitedoc"
	_ "github.com/amnesia-dev/amnesia/store/sqlitevec"

	// For the PostgreSQL configuration of step 6, and a `ledger:` URL.
	_ "github.com/amnesia-dev/amnesia/lineage/pgledger"
	_ "github.com/amnesia-dev/amnesia/store/pgdoc"
	_ "github.com/amnesia-dev/amnesia/store/pgvector"
)

// integrate:end

// integrate:begin
// ingest stores one document of owner, its chunks and their embeddings in
// the stores amnesia.yaml calls docStore and vecStore.
func ingest(ctx context.Context, app *capture.App, docStore, vecStore, docID, owner, text string) error {
	docs, err := app.Docs(ctx, docStore)
	if err != nil {
		return err
	}
	vecs, err := app.Vectors(ctx, vecStore)
	if err != nil {
		return err
	}
	// The application says whose document it is, once.
	if err := docs.Put(ctx, capture.Doc{ID: docID, Kind: capture.KindDocument, Subject: owner, Text: text}); err != nil {
		return err
	}
	for i, chunk := range strings.SplitAfter(text, ". ") {
		id := fmt.Sprintf("%s#%d", docID, i)
		// A chunk inherits its owner from its document...
		if err := docs.Put(ctx, capture.Doc{ID: id, Kind: capture.KindChunk, Parent: docID, Text: chunk}); err != nil {
			return err
		}
		// ...and an embedding from the chunk with the same id.
		if err := vecs.Put(ctx, capture.Vector{ID: id, Embedding: embed(chunk)}); err != nil {
			return err
		}
	}
	return nil
}

// embed stands in for your embedding model (8 dimensions, as configured).
func embed(text string) []float32 {
	v := make([]float32, 8)
	for i, r := range text {
		v[i%8] += float32(r%31) / 31
	}
	return v
}

// integrate:end

// integrate:begin
// search returns the text of the chunks nearest to a question. What an
// erasure has suppressed is never returned, even before it is deleted.
func search(ctx context.Context, app *capture.App, docStore, vecStore, question string) ([]string, error) {
	docs, err := app.Docs(ctx, docStore)
	if err != nil {
		return nil, err
	}
	vecs, err := app.Vectors(ctx, vecStore)
	if err != nil {
		return nil, err
	}
	neighbours, err := vecs.Search(ctx, embed(question), 5)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range neighbours {
		chunk, err := docs.Get(ctx, n.ID)
		if err != nil {
			return nil, err
		}
		if chunk != nil {
			out = append(out, chunk.Text)
		}
	}
	return out, nil
}

// integrate:end

// integrate:begin
// forget erases everything recorded for person, in every configured store,
// and checks the certificate as anyone holding the public key can.
func forget(ctx context.Context, app *capture.App, person, ticket string) (string, error) {
	erasure, err := app.Erase(ctx, person, ticket)
	if err != nil {
		return "", err
	}
	if !erasure.Complete {
		return erasure.Certificate, fmt.Errorf("erasure %s is incomplete: read %s", erasure.ID, erasure.Certificate)
	}
	pemKey, err := os.ReadFile(app.PublicKeyPath())
	if err != nil {
		return "", err
	}
	pub, err := certificate.ParsePublicKeyPEM(pemKey)
	if err != nil {
		return "", err
	}
	bundle, err := os.ReadFile(erasure.Certificate)
	if err != nil {
		return "", err
	}
	trusted := certificate.VerifyOptions{Keys: []certificate.TrustedKey{{Public: pub}}}
	if _, err := certificate.VerifyBundle(ctx, bundle, trusted); err != nil {
		return "", fmt.Errorf("certificate %s does not verify: %w", erasure.Certificate, err)
	}
	return erasure.Certificate, nil
}

// integrate:end

// integrate:begin
// run is an application's whole life with amnesia, on the stores amnesia.yaml
// names docStore and vecStore.
func run(ctx context.Context, stateDir, docStore, vecStore string) error {
	app, err := capture.Open(ctx, stateDir)
	if err != nil {
		return err
	}
	defer app.Close()

	if err := ingest(ctx, app, docStore, vecStore, "doc-1", "alice@example.org",
		"Alice moved to Lyon in May. She asked to be called on Tuesdays."); err != nil {
		return err
	}
	if err := ingest(ctx, app, docStore, vecStore, "doc-2", "bob@example.org",
		"Bob prefers email. He renewed his plan in March."); err != nil {
		return err
	}

	cert, err := forget(ctx, app, "alice@example.org", "DSR-2026-0042")
	if err != nil {
		return err
	}
	fmt.Println("certificate:", cert)

	chunks, err := search(ctx, app, docStore, vecStore, "Where does Alice live?")
	if err != nil {
		return err
	}
	fmt.Println(len(chunks), "chunks found, none of them Alice's")
	return nil
}

// integrate:end
