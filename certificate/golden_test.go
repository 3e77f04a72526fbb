package certificate

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden vectors and fuzz seeds in testdata")

const (
	goldenEnvelopeFile = "testdata/golden-v1.dsse.json"
	goldenPayloadFile  = "testdata/golden-v1.payload.json"
	goldenPubFile      = "testdata/golden-v1.pub.pem"

	// goldenKeyID is KeyID of the golden key; it must never change.
	goldenKeyID = "sha256:a050837d85070582ccf7394b0988847cc312cb88259b894899f6f239cf1791a5"
)

// goldenKey is the Ed25519 key whose seed is the bytes 0x00..0x1f.
func goldenKey() (ed25519.PublicKey, ed25519.PrivateKey) {
	seed := make([]byte, ed25519.SeedSize)
	for i := range seed {
		seed[i] = byte(i)
	}
	priv := ed25519.NewKeyFromSeed(seed)
	return priv.Public().(ed25519.PublicKey), priv
}

// otherKey is a second fixed key, seed 0x20 repeated.
func otherKey() (ed25519.PublicKey, ed25519.PrivateKey) {
	priv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{0x20}, ed25519.SeedSize))
	return priv.Public().(ed25519.PublicKey), priv
}

func hexSum(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// goldenPredicate is a realistic certificate: two stores, three artifacts
// (VERIFIED physical, VERIFIED logical, NEEDS_HUMAN). KeyID is left empty;
// Sign fills it in.
func goldenPredicate() Predicate {
	arts := []Artifact{
		{
			ID: "art:" + hexSum("app-db/users/42")[:32], Kind: "row", Store: "app-db",
			Outcome: Verified, Level: LevelPhysical, Method: "delete+vacuum",
			Measurement: &Measurement{
				Deleted: true,
				Logical: &Logical{Methods: []string{"by_id", "by_filter"}},
				Physical: &Physical{
					Needles: 12, Shared: 1, FoundBefore: 11, FoundAfter: 0,
					FilesScanned: 3, BytesScanned: 1245184,
				},
			},
		},
		{
			ID: "art:" + hexSum("vectors/embeddings/42")[:32], Kind: "embedding", Store: "vectors",
			Outcome: Verified, Level: LevelLogical, Method: "delete",
			Measurement: &Measurement{
				Deleted: true,
				Logical: &Logical{Methods: []string{"by_id", "by_filter", "by_similarity"}},
			},
		},
		{
			ID: "art:" + hexSum("app-db/invoices/42")[:32], Kind: "row", Store: "app-db",
			Outcome: NeedsHuman, Reason: "invoice under statutory retention; a person must decide",
			Method: "none",
		},
	}
	return Predicate{
		SchemaVersion: SchemaVersion,
		CertificateID: "01JNB5Q6X2R7Y8Z9A0B1C2D3E4",
		SubjectRef:    "hmac-sha256:" + hexSum("subject-ref"),
		Scope:         "tenant/acme",
		Reason:        "GDPR Art. 17 request",
		IssuedAt:      "2025-03-01T12:00:00Z",
		ValidUntil:    "2026-03-01T12:00:00Z",
		Trace:         TraceRef{ID: hexSum("golden trace"), Artifacts: 3},
		Complete:      false,
		DeclaredScope: []StoreState{
			{
				Name: "app-db", Type: "sqlite", Capabilities: []string{"delete", "vacuum", "physical-probe"},
				Touched: true, Artifacts: 2, Residue: "VERIFIED",
				Evidence: "byte scan after VACUUM: 0 of 11 needles found", Reclaim: "vacuum",
			},
			{
				Name: "vectors", Type: "sqlite-vec", Capabilities: []string{"delete", "similarity"},
				Touched: true, Artifacts: 1, Residue: "UNVERIFIED-no-physical-probe",
				Evidence: "logical queries only: by id, by filter, by similarity",
			},
		},
		Artifacts: arts,
		Counts:    CountArtifacts(arts),
		OutOfScope: []Exclusion{
			{What: "backups & replicas", Reason: "outside the configured stores"},
			{What: "derived models", Reason: "not traced by amnesia"},
		},
		Journal:      JournalRef{Head: hexSum("journal head"), Steps: 7},
		Reverifiable: true,
		ReverifyNote: "the stores can be probed again with the same trace",
	}
}

func goldenStatement() *Statement {
	p := goldenPredicate()
	return NewStatement(p, p.Trace.ID)
}

func TestGolden(t *testing.T) {
	ctx := context.Background()
	pub, priv := goldenKey()
	env, err := Sign(ctx, goldenStatement(), priv)
	if err != nil {
		t.Fatal(err)
	}
	_, payload, err := decodeEnvelope(env)
	if err != nil {
		t.Fatal(err)
	}
	pubPEM, err := EncodePublicKeyPEM(pub)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		writeFile(t, goldenEnvelopeFile, env)
		writeFile(t, goldenPayloadFile, payload)
		writeFile(t, goldenPubFile, pubPEM)
		for name, data := range fuzzSeeds(env) {
			corpus := fmt.Sprintf("go test fuzz v1\n[]byte(%s)\n", strconv.Quote(string(data)))
			writeFile(t, filepath.Join("testdata", "fuzz", "FuzzVerify", name), []byte(corpus))
		}
	}

	for _, g := range []struct {
		file string
		want []byte
	}{{goldenEnvelopeFile, env}, {goldenPayloadFile, payload}, {goldenPubFile, pubPEM}} {
		got, err := os.ReadFile(g.file)
		if err != nil {
			t.Fatalf("%v (run go test ./certificate -update)", err)
		}
		if !bytes.Equal(got, g.want) {
			t.Errorf("%s differs from what Sign produces at byte %d; a format change needs a new schema version", g.file, firstDiff(got, g.want))
		}
	}

	// Verify the committed files, not the bytes made in this run.
	fileEnv, _ := os.ReadFile(goldenEnvelopeFile)
	filePEM, _ := os.ReadFile(goldenPubFile)
	filePub, err := ParsePublicKeyPEM(filePEM)
	if err != nil {
		t.Fatal(err)
	}
	st, err := Verify(ctx, fileEnv, filePub)
	if err != nil {
		t.Fatalf("Verify(golden) = %v", err)
	}
	want := goldenStatement()
	want.Predicate.KeyID = goldenKeyID
	if !reflect.DeepEqual(st, want) {
		t.Errorf("Verify(golden) statement = %+v, want %+v", st, want)
	}
	if bytes.Contains(payload, []byte(`\u0026`)) || !bytes.Contains(payload, []byte("backups & replicas")) {
		t.Error("payload escapes HTML characters")
	}
	if bytes.HasSuffix(payload, []byte("\n")) || !bytes.HasSuffix(env, []byte("}\n")) {
		t.Error("payload must not, envelope file must end with a newline")
	}
}

func TestSignDeterministic(t *testing.T) {
	_, priv := goldenKey()
	a, err := Sign(context.Background(), goldenStatement(), priv)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Sign(context.Background(), goldenStatement(), priv)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Error("signing the same statement twice gave different bytes")
	}
}

func TestKeyIDGolden(t *testing.T) {
	pub, _ := goldenKey()
	if got := KeyID(pub); got != goldenKeyID {
		t.Errorf("KeyID(golden) = %s, want %s", got, goldenKeyID)
	}
	// Same as: openssl pkey -pubin -in golden-v1.pub.pem -outform DER | sha256sum
	pemBytes, err := os.ReadFile(goldenPubFile)
	if err != nil {
		t.Fatal(err)
	}
	der := pemDER(t, pemBytes)
	if got := "sha256:" + fmt.Sprintf("%x", sha256.Sum256(der)); got != goldenKeyID {
		t.Errorf("sha256 of the PEM's DER = %s, want %s", got, goldenKeyID)
	}
	other, _ := otherKey()
	if KeyID(other) == goldenKeyID {
		t.Error("different keys have the same key id")
	}
}

func writeFile(t *testing.T, name string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// verifyMutated signs the golden statement as mutate leaves it, past
// Sign's own schema checks (signPayload), and returns what Verify says of
// it: how the verifier's checks are tested on statements Sign would refuse.
func verifyMutated(ctx context.Context, t *testing.T, mutate func(*Statement)) error {
	t.Helper()
	pub, priv := goldenKey()
	st := goldenStatement()
	st.Predicate.KeyID = KeyID(pub)
	mutate(st)
	payload, err := Encode(st)
	if err != nil {
		t.Fatal(err)
	}
	env, err := signPayload(ctx, payload, priv)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Verify(ctx, env, pub)
	return err
}
