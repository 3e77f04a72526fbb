package certificate

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

func TestSchemaChecks(t *testing.T) {
	ctx := context.Background()
	pub, priv := goldenKey()
	other, _ := otherKey()
	recount := func(st *Statement) { st.Predicate.Counts = CountArtifacts(st.Predicate.Artifacts) }
	cases := []struct {
		name   string
		mutate func(st *Statement)
		want   string // part of the error message naming the failed check
	}{
		{"legacy _type", func(st *Statement) { st.Type = "https://in-toto.io/Statement/v0.1" }, "_type"},
		{"bogus _type", func(st *Statement) { st.Type = "bogus" }, "wrong statement type"},
		{"predicateType", func(st *Statement) { st.PredicateType = "https://amnesia.dev/erasure-certificate/v2" }, "predicateType"},
		{"schema_version", func(st *Statement) { st.Predicate.SchemaVersion = "amnesia.certificate/v2" }, "schema_version"},
		{"key_id other", func(st *Statement) { st.Predicate.KeyID = KeyID(other) }, "key_id"},
		{"key_id empty", func(st *Statement) { st.Predicate.KeyID = "" }, "key_id"},
		{"certificate_id empty", func(st *Statement) { st.Predicate.CertificateID = "" }, "certificate_id"},
		{"no subject", func(st *Statement) { st.Subject = nil }, "subject required"},
		{"two subjects", func(st *Statement) { st.Subject = append(st.Subject, st.Subject[0]) }, "exactly one"},
		{"subject name", func(st *Statement) { st.Subject[0].Name = "amnesia:erasure/other" }, "subject[0].name"},
		{"digest upper case", func(st *Statement) {
			d := strings.ToUpper(st.Predicate.Trace.ID)
			st.Subject[0].Digest["sha256"], st.Predicate.Trace.ID = d, d
		}, "digest.sha256"},
		{"digest short", func(st *Statement) { st.Subject[0].Digest["sha256"] = st.Predicate.Trace.ID[:62] }, "incorrect length"},
		{"digest not sha256", func(st *Statement) {
			st.Subject[0].Digest = map[string]string{"sha512": strings.Repeat("ab", 64)}
		}, "digest.sha256"},
		{"trace.id", func(st *Statement) { st.Predicate.Trace.ID = hexSum("another trace") }, "trace.id"},
		{"issued_at", func(st *Statement) { st.Predicate.IssuedAt = "2025-03-01 12:00:00" }, "issued_at"},
		{"valid_until", func(st *Statement) { st.Predicate.ValidUntil = "" }, "valid_until is not an RFC 3339"},
		{"window empty", func(st *Statement) { st.Predicate.ValidUntil = st.Predicate.IssuedAt }, "not after"},
		{"window reversed", func(st *Statement) { st.Predicate.ValidUntil = "2024-03-01T12:00:00Z" }, "not after"},
		{"via unknown", func(st *Statement) { st.Predicate.Artifacts[0].Via = "guess" }, "artifacts[0].via"},
		{"outcome unknown", func(st *Statement) { st.Predicate.Artifacts[0].Outcome = "DELETED" }, "artifacts[0].outcome"},
		{"outcome case", func(st *Statement) { st.Predicate.Artifacts[1].Outcome = "verified" }, "artifacts[1].outcome"},
		{"verified no level", func(st *Statement) { st.Predicate.Artifacts[0].Level = "" }, "artifacts[0].level"},
		{"verified bad level", func(st *Statement) { st.Predicate.Artifacts[1].Level = "probable" }, "artifacts[1].level"},
		{"needs_human no reason", func(st *Statement) { st.Predicate.Artifacts[2].Reason = "" }, "artifacts[2].reason"},
		{"residual no reason", func(st *Statement) {
			st.Predicate.Artifacts[0].Outcome, st.Predicate.Artifacts[0].Level = Residual, ""
			recount(st)
		}, "artifacts[0].reason"},
		{"physical with partial coverage", func(st *Statement) {
			st.Predicate.Artifacts[0].Measurement.Physical.Coverage = &Coverage{RecordBytes: 5000, CoveredBytes: 4999, WindowBytes: 32, FragmentBytes: 39}
		}, "artifacts[0].level is physical but measurement.physical.coverage"},
		{"verified with copies", func(st *Statement) {
			st.Predicate.Artifacts[0].Measurement.Copies = []Copy{{Store: "s", Record: "art:00", Windows: 1}}
		}, "artifacts[0] is VERIFIED but measurement.copies"},
		{"verified but found after", func(st *Statement) {
			st.Predicate.Artifacts[0].Measurement.Physical.FoundAfter = 1
		}, "artifacts[0] is VERIFIED but measurement.physical.found_after"},
		{"verified logical but found after", func(st *Statement) {
			st.Predicate.Artifacts[1].Measurement.Physical = &Physical{Needles: 4, FoundBefore: 4, FoundAfter: 2}
		}, "artifacts[1] is VERIFIED but measurement.physical.found_after"},
		{"verified but returned by id", func(st *Statement) { st.Predicate.Artifacts[1].Measurement.Logical.ByID = true }, "artifacts[1] is VERIFIED but measurement.logical"},
		{"verified but returned by similarity", func(st *Statement) {
			st.Predicate.Artifacts[0].Measurement.Logical.BySimilarity = true
		}, "artifacts[0] is VERIFIED but measurement.logical"},
		{"physical without power", func(st *Statement) { st.Predicate.Artifacts[0].Measurement.Physical.FoundBefore = 0 }, "artifacts[0].level is physical but measurement.physical found none"},
		{"physical without needles", func(st *Statement) {
			st.Predicate.Artifacts[0].Measurement.Physical.Needles, st.Predicate.Artifacts[0].Measurement.Physical.FoundBefore = 0, 0
		}, "artifacts[0].level is physical but measurement.physical found none"},
		{"physical without measurement", func(st *Statement) { st.Predicate.Artifacts[0].Measurement.Physical = nil }, "artifacts[0].level is physical but it has no measurement.physical"},
		{"physical without any measurement", func(st *Statement) { st.Predicate.Artifacts[0].Measurement = nil }, "artifacts[0].level is physical but it has no measurement.physical"},
		{"complete with a residual", func(st *Statement) {
			st.Predicate.Artifacts[2].Outcome = Residual
			st.Predicate.Complete = true
			recount(st)
		}, "complete is true but an artifact is"},
		{"complete with an unverified", func(st *Statement) {
			st.Predicate.Artifacts[1].Outcome, st.Predicate.Artifacts[1].Level, st.Predicate.Artifacts[1].Reason = Unverified, "", "store failed"
			st.Predicate.Complete = true
			recount(st)
		}, "complete is true but an artifact is"},
		{"complete with an out of scope", func(st *Statement) {
			st.Predicate.Artifacts[2].Outcome = OutOfScope
			st.Predicate.Complete = true
			recount(st)
		}, "complete is true but an artifact is"},
		{"out_of_scope nil", func(st *Statement) { st.Predicate.OutOfScope = nil }, "out_of_scope is empty"},
		{"out_of_scope what", func(st *Statement) { st.Predicate.OutOfScope[1].What = "" }, "out_of_scope[1].what"},
		{"counts.artifacts", func(st *Statement) { st.Predicate.Counts.Artifacts++ }, "counts.artifacts"},
		{"counts.verified", func(st *Statement) { st.Predicate.Counts.Verified-- }, "counts.verified "},
		{"counts.verified_logical", func(st *Statement) { st.Predicate.Counts.VerifiedLogical = 0 }, "counts.verified_logical"},
		{"counts.needs_human", func(st *Statement) { st.Predicate.Counts.NeedsHuman = 0 }, "counts.needs_human"},
		{"counts.residual", func(st *Statement) { st.Predicate.Counts.Residual = 1 }, "counts.residual"},
		{"follows id empty", func(st *Statement) {
			st.Predicate.Follows = &ReverifyLink{PayloadSHA256: hexSum("x"), LogIndex: 1}
		}, "follows.certificate_id is empty"},
		{"follows self", func(st *Statement) {
			st.Predicate.Follows = &ReverifyLink{CertificateID: st.Predicate.CertificateID, PayloadSHA256: hexSum("x")}
		}, "follows.certificate_id is the certificate's own id"},
		{"follows digest", func(st *Statement) {
			st.Predicate.Follows = &ReverifyLink{CertificateID: "er-0", PayloadSHA256: "ABC"}
		}, "follows.payload_sha256"},
		{"follows log index", func(st *Statement) {
			st.Predicate.Follows = &ReverifyLink{CertificateID: "er-0", PayloadSHA256: hexSum("x"), LogIndex: -1}
		}, "follows.log_index"},
		{"follows and reverifies", func(st *Statement) {
			st.Predicate.Follows = &ReverifyLink{CertificateID: "er-0", PayloadSHA256: hexSum("x")}
			st.Predicate.Reverifies = &ReverifyLink{CertificateID: "er-1", PayloadSHA256: hexSum("y")}
		}, "follows is set on a re-verification"},
		{"artifact dropped", func(st *Statement) { st.Predicate.Artifacts = st.Predicate.Artifacts[:2] }, "counts.artifacts"},
	}
	secrets := []string{goldenPredicate().SubjectRef, goldenPredicate().CertificateID, goldenPredicate().Trace.ID}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := goldenStatement()
			st.Predicate.KeyID = KeyID(pub)
			c.mutate(st)
			payload, err := Encode(st)
			if err != nil {
				t.Fatal(err)
			}
			env, err := signPayload(ctx, payload, priv)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Verify(ctx, env, pub)
			if got != nil {
				t.Error("Verify returned a statement")
			}
			wantErr(t, "Verify", err, ErrSchema)
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("Verify error %q does not name %q", err, c.want)
			}
			for _, s := range secrets {
				if strings.Contains(err.Error(), s) {
					t.Errorf("Verify error %q leaks payload contents", err)
				}
			}
			if strings.HasPrefix(c.name, "key_id") {
				return // Sign sets key_id itself
			}
			st = goldenStatement()
			c.mutate(st)
			if _, err := Sign(ctx, st, priv); !errors.Is(err, ErrSchema) {
				t.Errorf("Sign = %v, want ErrSchema", err)
			}
		})
	}
}

func TestSchemaRawPayload(t *testing.T) {
	ctx := context.Background()
	pub, priv := goldenKey()
	golden, err := Encode(goldenStatementWithKey(pub))
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string][]byte{
		"not json":        []byte("not json"),
		"json array":      []byte("[]"),
		"no predicate":    []byte(`{"_type":"https://in-toto.io/Statement/v1","subject":[{"name":"x","digest":{"sha256":"` + hexSum("t") + `"}}],"predicateType":"` + PredicateType + `"}`),
		"counts string":   bytes.Replace(golden, []byte(`"counts":{"artifacts":3`), []byte(`"counts":{"artifacts":"3"`), 1),
		"complete string": bytes.Replace(golden, []byte(`"complete":false`), []byte(`"complete":"no"`), 1),
	}
	for name, payload := range cases {
		env, err := signPayload(ctx, payload, priv)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Verify(ctx, env, pub)
		wantErr(t, name, err, ErrSchema)
	}

	// Keys another JSON reader could read differently: a repeated key (Go
	// keeps the last; the in-toto statement's protobuf JSON parse refuses
	// it first), a field name in another case (Go matches it without
	// regard to case, other readers do not).
	keyCases := map[string]struct {
		payload []byte
		want    string
	}{
		"complete repeated":    {bytes.Replace(golden, []byte(`"complete":false`), []byte(`"complete":false,"complete":true`), 1), "not an in-toto statement"},
		"complete in capitals": {bytes.Replace(golden, []byte(`"complete":false`), []byte(`"complete":false,"Complete":true`), 1), "differs from the field complete only in case"},
		"outcome key folded":   {bytes.Replace(golden, []byte(`"outcome":"NEEDS_HUMAN"`), []byte(`"OUTCOME":"NEEDS_HUMAN"`), 1), "differs from the field outcome only in case"},
		"long s folds to s":    {bytes.Replace(golden, []byte(`"complete":false`), []byte(`"complete":false,"`+"\u017f"+`ubject_ref":"x"`), 1), "differs from the field subject_ref only in case"},
		"unknown key repeated": {bytes.Replace(golden, []byte(`"predicate":{`), []byte(`"predicate":{"future":1,"future":2,`), 1), "not an in-toto statement"},
	}
	for name, c := range keyCases {
		env, err := signPayload(ctx, c.payload, priv)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Verify(ctx, env, pub)
		wantErr(t, name, err, ErrSchema)
		if err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %q does not say %q", name, err, c.want)
		}
	}

	// Unknown fields are ignored, in the statement and in the predicate.
	extra := bytes.Replace(golden, []byte(`"predicate":{`), []byte(`"future":1,"predicate":{"future_field":{"a":[1]},`), 1)
	env, err := signPayload(ctx, extra, priv)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(ctx, env, pub); err != nil {
		t.Errorf("unknown fields: %v", err)
	}
}

func goldenStatementWithKey(pub []byte) *Statement {
	st := goldenStatement()
	st.Predicate.KeyID = KeyID(pub)
	return st
}

func TestExpired(t *testing.T) {
	p := goldenPredicate()
	until := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	if p.Expired(until) {
		t.Error("expired at valid_until")
	}
	if !p.Expired(until.Add(time.Second)) {
		t.Error("not expired after valid_until")
	}
	if p.Expired(time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)) {
		t.Error("expired inside the window")
	}
	p.ValidUntil = "soon"
	if !p.Expired(until) {
		t.Error("unparsable valid_until did not count as expired")
	}
}

func TestEncode(t *testing.T) {
	if _, err := Encode(nil); err == nil {
		t.Error("Encode(nil) succeeded")
	}
	if _, err := Sign(context.Background(), nil, nil); err == nil {
		t.Error("Sign(nil) succeeded")
	}
	if _, err := Sign(context.Background(), goldenStatement(), make([]byte, 10)); err == nil {
		t.Error("Sign with a 10-byte key succeeded")
	}
	st := NewStatement(goldenPredicate(), "abc")
	if st.Type != StatementType || st.PredicateType != PredicateType || len(st.Subject) != 1 ||
		st.Subject[0].Name != SubjectPrefix+goldenPredicate().CertificateID || st.Subject[0].Digest["sha256"] != "abc" {
		t.Errorf("NewStatement = %+v", st)
	}
}

// checkKeys on its own: Verify's protobuf parse refuses a repeated key
// before it runs, so its own check is tested here.
func TestCheckKeys(t *testing.T) {
	for payload, want := range map[string]string{
		`{"predicate":{"complete":false,"complete":true}}`:         "repeats the field complete",
		`{"predicate":{"x":[1,{"y":2}],"x":3}}`:                    "repeats a key",
		`{"predicate":{"artifacts":[{"Level":"physical"}]}}`:       "differs from the field level only in case",
		`{"subject":[{"digest":{"sha256":"ab","sha512":"cd"}}]}`:   "",
		`{"predicate":{"future":{"complete":1},"complete":false}}`: "",
		`[1,2,{"a":{"b":[{}]}}]`:                                   "",
		`{"predicate":`:                                            "not a JSON statement",
	} {
		err := checkKeys([]byte(payload))
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v, want no error", payload, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: %v, want an error saying %q", payload, err, want)
		}
	}
}

// amnesia-client's offline verifier holds payload keys to the same field
// names as checkKeys (SCHEMA_FIELDS in offline.py): a field added here and
// not there would be read by Go under any case and refused by neither.
func TestPythonSchemaFieldsMatch(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "clients", "python", "amnesia_client", "offline.py"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(src), "SCHEMA_FIELDS = frozenset((")
	list, _, ok2 := strings.Cut(rest, "))")
	if !ok || !ok2 {
		t.Fatal("offline.py has no SCHEMA_FIELDS = frozenset((…)) list")
	}
	var py []string
	for _, m := range regexp.MustCompile(`"([^"]*)"`).FindAllStringSubmatch(list, -1) {
		py = append(py, m[1])
	}
	sort.Strings(py)
	if got, want := strings.Join(py, " "), strings.Join(SchemaFields(), " "); got != want {
		t.Errorf("offline.py SCHEMA_FIELDS differ from certificate.SchemaFields():\n python: %s\n go:     %s", got, want)
	}
}

// amnesia-client's offline verifier reads a payload as decodeStatement does
// (encoding/json into Statement): _GO_TYPES in offline.py gives the Go type
// of every field, so that it refuses a value of another JSON type and reads
// null as the zero value, as Verify does. A field added or retyped here and
// not there would be read differently by the two verifiers.
func TestPythonGoTypesMatch(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "clients", "python", "amnesia_client", "offline.py"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(src), "_GO_TYPES: Dict[str, Dict[str, str]] = {")
	table, _, ok2 := strings.Cut(rest, "\n}\n")
	if !ok || !ok2 {
		t.Fatal("offline.py has no _GO_TYPES: Dict[str, Dict[str, str]] = {…} table")
	}
	py := map[string]map[string]string{}
	field := regexp.MustCompile(`"([^"]+)":\s*"([^"]*)"`)
	for _, m := range regexp.MustCompile(`"(\w+)":\s*\{([^{}]*)\}`).FindAllStringSubmatch(table, -1) {
		fields := map[string]string{}
		for _, f := range field.FindAllStringSubmatch(m[2], -1) {
			fields[f[1]] = f[2]
		}
		py[m[1]] = fields
	}
	want := map[string]map[string]string{}
	var typeName func(t reflect.Type) string
	var walk func(t reflect.Type)
	typeName = func(t reflect.Type) string {
		switch t.Kind() {
		case reflect.String:
			return "string"
		case reflect.Bool:
			return "bool"
		case reflect.Int, reflect.Int64:
			return "int"
		case reflect.Float64:
			return "float"
		case reflect.Slice:
			return "[]" + typeName(t.Elem())
		case reflect.Pointer:
			return "*" + typeName(t.Elem())
		case reflect.Map:
			return "map[" + typeName(t.Key()) + "]" + typeName(t.Elem())
		case reflect.Struct:
			walk(t)
			return t.Name()
		}
		return "unsupported " + t.String()
	}
	walk = func(t reflect.Type) {
		if _, seen := want[t.Name()]; seen {
			return
		}
		fields := map[string]string{}
		want[t.Name()] = fields
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if !f.IsExported() || name == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			fields[name] = typeName(f.Type)
		}
	}
	walk(reflect.TypeOf(Statement{}))
	if !reflect.DeepEqual(py, want) {
		t.Errorf("offline.py _GO_TYPES differ from the Go types of Statement:\n python: %v\n go:     %v", py, want)
	}
}
