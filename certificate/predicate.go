package certificate

// Wire constants. A change that old verifiers cannot read gets a new
// SchemaVersion and a new PredicateType; fields may be added within a
// version, and verifiers ignore fields they do not know.
const (
	PayloadType   = "application/vnd.in-toto+json"
	StatementType = "https://in-toto.io/Statement/v1"
	PredicateType = "https://amnesia.dev/erasure-certificate/v1"
	SchemaVersion = "amnesia.certificate/v1"
)

// Outcomes of one artifact.
const (
	Verified   = "VERIFIED"     // Level names how: "physical" or "logical"
	Unverified = "UNVERIFIED"   // Reason says why nothing could be shown
	Residual   = "RESIDUAL"     // Reason and Measurement say what was still found
	OutOfScope = "OUT_OF_SCOPE" // Reason says why amnesia did not act
	NeedsHuman = "NEEDS_HUMAN"  // Reason says what a person must decide
)

// Verification levels, strongest first.
const (
	LevelPhysical = "physical"
	LevelLogical  = "logical"
)

// Statement is an in-toto Statement v1 carrying a Predicate. Field order is
// fixed so that the signed bytes are deterministic.
type Statement struct {
	Type          string               `json:"_type"`
	Subject       []ResourceDescriptor `json:"subject"`
	PredicateType string               `json:"predicateType"`
	Predicate     Predicate            `json:"predicate"`
}

// ResourceDescriptor names what the statement is about: the erasure, by the
// digest of the exact traced artifact set it erased.
type ResourceDescriptor struct {
	Name   string            `json:"name"`
	Digest map[string]string `json:"digest"`
}

// Predicate is the erasure certificate proper. It holds no personal data:
// subjects appear as keyed-digest refs, artifacts by keyed ids, and
// measurements as counts.
type Predicate struct {
	SchemaVersion string       `json:"schema_version"`
	CertificateID string       `json:"certificate_id"`
	KeyID         string       `json:"key_id"`
	SubjectRef    string       `json:"subject_ref"`
	Scope         string       `json:"scope"`
	Reason        string       `json:"reason"`
	IssuedAt      string       `json:"issued_at"`   // RFC 3339, UTC, seconds
	ValidUntil    string       `json:"valid_until"` // RFC 3339, UTC, seconds
	Trace         TraceRef     `json:"trace"`
	Complete      bool         `json:"complete"` // every erasable artifact reached VERIFIED
	DeclaredScope []StoreState `json:"declared_scope"`
	Artifacts     []Artifact   `json:"artifacts"`
	Counts        Counts       `json:"counts"`
	OutOfScope    []Exclusion  `json:"out_of_scope"`
	Journal       JournalRef   `json:"journal"`
	Reverifiable  bool         `json:"reverifiable"`
	ReverifyNote  string       `json:"reverify_note"`
	// Reverifies is set on a re-verification certificate only: the
	// certificate it re-verified. Absent from erasure certificates.
	Reverifies *ReverifyLink `json:"reverifies,omitempty"`
	// Follows is set on an erasure certificate that continues an earlier
	// erasure of the same trace whose certificate was incomplete (a store
	// was down, a record was still found): that certificate. Absent from
	// first erasures.
	Follows *ReverifyLink `json:"follows,omitempty"`
	// CryptoShredding is set when the subject had a data key (content
	// written sealed through capture): whether this erasure destroyed it,
	// what was measured, and what that does and does not cover.
	CryptoShredding *Shredding `json:"crypto_shredding,omitempty"`
	// Models is set when the subject's rows reached trained models
	// (model.go): one outcome per model, at the model level. Absent
	// otherwise.
	Models []ModelOutcome `json:"models,omitempty"`
	// Semantic is set when a configured store searched for near-duplicates
	// or measured retrieval drift (docs/nearby.md): what was searched, with
	// which bounds, and the drift measured. Measurements, never proof.
	Semantic *Semantic `json:"semantic,omitempty"`
}

// ReverifyLink names an earlier certificate (the one a re-verification
// re-verified, or the incomplete one an erasure continues), so that a
// verifier holding both can check the link: the certificate id, the
// hex SHA-256 of its signed DSSE payload, and its index in the transparency
// log (the leaf that CertificateLeaf of that id and payload gives).
type ReverifyLink struct {
	CertificateID string `json:"certificate_id"`
	PayloadSHA256 string `json:"payload_sha256"`
	LogIndex      int64  `json:"log_index"`
}

// TraceRef identifies the traced artifact set that was erased.
type TraceRef struct {
	ID        string `json:"id"`        // sha256 of the canonical trace, hex
	Artifacts int    `json:"artifacts"` // artifacts in the trace
}

// StoreState is one configured store: touched by this erasure or not.
type StoreState struct {
	Name         string   `json:"name"`
	Type         string   `json:"type"`
	Capabilities []string `json:"capabilities"`
	Touched      bool     `json:"touched"`
	Artifacts    int      `json:"artifacts"`
	Residue      string   `json:"residue"`  // VERIFIED, RESIDUAL, UNVERIFIED-<reason>, NOT-TOUCHED, …
	Evidence     string   `json:"evidence"` // what backs Residue
	Reclaim      string   `json:"reclaim,omitempty"`
}

// Artifact is the outcome for one traced artifact.
type Artifact struct {
	ID          string       `json:"id"` // keyed digest of scope, store and key
	Kind        string       `json:"kind"`
	Store       string       `json:"store"`
	Outcome     string       `json:"outcome"`
	Level       string       `json:"level,omitempty"`
	Reason      string       `json:"reason,omitempty"`
	Method      string       `json:"method"`
	Measurement *Measurement `json:"measurement,omitempty"`
	// Sealed: the record's content fields were written encrypted with the
	// subject's data key (see Predicate.CryptoShredding).
	Sealed bool `json:"sealed,omitempty"`
	// Via says how lineage learned of the record when it was not captured
	// as it was written: "reconcile" (amnesia reconcile found it through a
	// field holding the subject's identifier and an operator adopted it).
	// Absent for captured records.
	Via string `json:"via,omitempty"`
}

// Shredding is the crypto-shredding section of a certificate.
type Shredding struct {
	// KeyDestroyed: the subject's data key is destroyed.
	KeyDestroyed bool `json:"key_destroyed"`
	// Level is how its destruction was measured: physical (no byte of the
	// wrapped key left in the key store's files) or logical (the key store
	// no longer returns it).
	Level    string `json:"level"`
	Evidence string `json:"evidence"`
	// SealedArtifacts counts the artifacts of this erasure whose content
	// was written sealed.
	SealedArtifacts int    `json:"sealed_artifacts"`
	Covers          string `json:"covers"`
	DoesNotCover    string `json:"does_not_cover"`
}

// ViaReconcile is Artifact.Via for a record adopted by amnesia reconcile.
const ViaReconcile = "reconcile"

// Measurement is what was measured for one artifact.
type Measurement struct {
	Deleted  bool      `json:"deleted"`
	Logical  *Logical  `json:"logical,omitempty"`
	Physical *Physical `json:"physical,omitempty"`
	// Copies lists other live records of the same store, outside the
	// subject's lineage, that held some of the record's windows when it
	// was read before deletion: at most a few, those holding the most;
	// CopiesUnlisted counts the others.
	Copies         []Copy `json:"copies,omitempty"`
	CopiesUnlisted int    `json:"copies_unlisted,omitempty"`
	// Near is set on a near-duplicate candidate (an artifact of kind
	// KindNearDuplicate, always NEEDS_HUMAN and never deleted): how it
	// resembles an erased artifact.
	Near *Near `json:"near,omitempty"`
}

// Logical records which query paths still returned the record (false = not returned).
type Logical struct {
	ByID         bool     `json:"by_id"`
	ByFilter     bool     `json:"by_filter"`
	BySimilarity bool     `json:"by_similarity"`
	Methods      []string `json:"methods"`
}

// Physical records a byte scan of the store's files.
type Physical struct {
	Needles      int   `json:"needles"`       // needles taken from the live record
	Shared       int   `json:"shared"`        // windows skipped: other live records hold the same bytes
	FoundBefore  int   `json:"found_before"`  // needles found before deletion: the probe's power
	FoundAfter   int   `json:"found_after"`   // needles found after erasure
	FilesScanned int   `json:"files_scanned"` // files in the final scan
	BytesScanned int64 `json:"bytes_scanned"` // bytes in the final scan
	// Coverage says which of the record's bytes the needles were cut from
	// (absent from certificates issued before it was recorded).
	Coverage *Coverage `json:"coverage,omitempty"`
}

// Coverage is how much of a record the byte scan searched for.
type Coverage struct {
	RecordBytes   int64 `json:"record_bytes"`   // bytes of the record's searched fields: its text, its vector's stored encoding
	CoveredBytes  int64 `json:"covered_bytes"`  // of those, bytes that lie in a window
	WindowBytes   int   `json:"window_bytes"`   // the size of a window
	FragmentBytes int   `json:"fragment_bytes"` // any contiguous run of this many covered bytes contains a whole window
}

// Complete reports whether every byte of the record lies in a window.
func (c *Coverage) Complete() bool { return c.CoveredBytes >= c.RecordBytes }

// Copy is another record that holds some of an artifact's windows (see
// Measurement.Copies).
type Copy struct {
	Store   string `json:"store"`
	Record  string `json:"record"`  // keyed id of the record's store key, as an artifact id is made (art:…), never the key
	Windows int    `json:"windows"` // how many of the artifact's windows it holds
}

// KindNearDuplicate is Artifact.Kind of a near-duplicate candidate: a
// record outside the subject's lineage that resembles an erased one.
const KindNearDuplicate = "near-duplicate"

// Near-duplicate methods (Near.Method).
const (
	NearQuote      = "quote"      // shares text windows with the erased record
	NearParaphrase = "paraphrase" // its vector is close to the erased record's
)

// LevelSemantic is Semantic.Level.
const LevelSemantic = "semantic"

// Near says how a candidate resembles an erased artifact.
type Near struct {
	Method string `json:"method"` // quote or paraphrase
	// Of is the id of the erased artifact it resembles.
	Of string `json:"of"`
	// Similarity: for a quote, the fraction of Of's windows the candidate
	// holds; for a paraphrase, the cosine similarity of the two vectors.
	Similarity float64 `json:"similarity"`
	// Windows and OfWindows (quotes): windows of Of it holds, of how many.
	Windows   int `json:"windows,omitempty"`
	OfWindows int `json:"of_windows,omitempty"`
}

// Semantic is the semantic level of a certificate: near-duplicate searches
// and retrieval drift, reported as measurements.
type Semantic struct {
	Level    string       `json:"level"` // always "semantic"
	Note     string       `json:"note"`
	Searches []NearSearch `json:"searches"`
	Drift    []Drift      `json:"drift,omitempty"`
}

// NearSearch is what one store's near-duplicate search covered.
type NearSearch struct {
	Store   string   `json:"store"`
	Methods []string `json:"methods"` // quote, paraphrase
	// Records: erased records searched with their vector; NotSearched:
	// those over the configured bound (paraphrases).
	Records       int     `json:"records"`
	NotSearched   int     `json:"not_searched,omitempty"`
	Neighbours    int     `json:"neighbours,omitempty"`
	Similarity    float64 `json:"similarity,omitempty"`
	QuoteFraction float64 `json:"quote_fraction,omitempty"`
	Candidates    int     `json:"candidates"`
	// Note says what could not be searched, and why, when something
	// configured could not run (an adapter without a similarity search).
	Note string `json:"note,omitempty"`
}

// Drift is retrieval drift measured in one store: the k nearest neighbours
// of fixed control queries (other records' vectors), before deletion and
// after the erasure.
type Drift struct {
	Store   string `json:"store"`
	Queries int    `json:"queries"` // control queries compared before and after
	K       int    `json:"k"`
	// OverlapAtK is the mean, over the queries, of |before ∩ after| / |before|;
	// MinOverlapAtK the least.
	OverlapAtK    float64 `json:"overlap_at_k"`
	MinOverlapAtK float64 `json:"min_overlap_at_k"`
	// ErasedNeighbours counts the before-neighbours that were records this
	// erasure deleted (their loss is expected).
	ErasedNeighbours int `json:"erased_neighbours"`
	// OverlapUnerasedAtK is the mean overlap counted over the
	// before-neighbours that this erasure did not delete: how much the
	// neighbourhoods moved beyond the expected loss of the erased records.
	OverlapUnerasedAtK float64 `json:"overlap_unerased_at_k"`
	Method             string  `json:"method"`
}

// Counts sums the artifact outcomes.
type Counts struct {
	Artifacts        int `json:"artifacts"`
	Verified         int `json:"verified"`
	VerifiedPhysical int `json:"verified_physical"`
	VerifiedLogical  int `json:"verified_logical"`
	Unverified       int `json:"unverified"`
	Residual         int `json:"residual"`
	OutOfScope       int `json:"out_of_scope"`
	NeedsHuman       int `json:"needs_human"`
}

// Exclusion is something the certificate explicitly does not cover.
type Exclusion struct {
	What   string `json:"what"`
	Reason string `json:"reason"`
}

// JournalRef pins the erasure journal the certificate was issued from.
type JournalRef struct {
	Head  string `json:"head"`  // sha256 hash chain over the completed steps, hex
	Steps int    `json:"steps"` // completed steps
}
