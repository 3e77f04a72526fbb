// Package state manages amnesia's state directory: the installation pepper,
// the signing key, the configuration, the ledger, journals and certificates.
//
// Layout (all files 0600, directories 0700):
//
//	amnesia.yaml           configuration (stores, scope, certificate validity)
//	pepper                 32 random bytes: the key of every subject digest
//	signing-key.pem        the current Ed25519 signing key, PKCS#8 PEM
//	                       (pepper and signing-key.pem are absent when amnesia.yaml's
//	                       secrets: names another source: secretsconfig.go, docs/scale.md)
//	signing-key.pub.pem    its public key, PEM SubjectPublicKeyInfo ("BEGIN PUBLIC KEY")
//	keyring.json           every signing key's public key, id, creation and retirement
//	                       time (a trust file, see keyring.go and docs/keys.md)
//	ledger.db              lineage ledger (SQLite), unless amnesia.yaml names another (ledger:)
//	ledger-state.json      the ledger's kind and its log's last signed size and root (ledgerstate.go)
//	traces/<id>.json       traces saved for `erase --trace`          (SQLite ledger)
//	erasures/<id>/         one erasure: journal.jsonl, sealed evidence while it runs
//	                       (SQLite ledger; a model leg's journal with either)
//	certificates/<id>.dsse.json
//	                       (with a PostgreSQL ledger: this host's copies; journals,
//	                       evidence, traces and certificates live in the ledger,
//	                       see internal/saga/durable.go and docs/ledger.md)
//	amnesia.log            structured log (JSON lines)
//	worker.lock            flock of `amnesia worker` while it erases (file-based stores)
//	locks/erasure-<h>.lock flock of the erasure of one subject (SQLite ledger; internal/saga/lock.go)
package state

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/internal/atomicfile"
	"github.com/amnesia-dev/amnesia/internal/secrets"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/subject"
)

// DefaultDir is the state directory used when none is given.
const DefaultDir = ".amnesia"

// ErrNotInitialized means the directory has no amnesia state.
var ErrNotInitialized = errors.New("no amnesia state here: run `amnesia init` first")

// Dir is an opened state directory.
type Dir struct {
	Path   string
	Config *Config
	Keyer  *subject.Keyer
	Key    ed25519.PrivateKey
	// KeyVersion is the signing key's version in its source (a dir:
	// source), "" otherwise.
	KeyVersion string
	// keySrc is the signing key's source; nil: signing-key.pem.
	keySrc secrets.Provider
	// keyringSeen is the ledger's keyring as this host last synced it
	// (SyncKeyring); ChangeKeyring refuses a change when the ledger's is
	// no longer that one.
	keyringSeen string
	// prepared is the rotation PrepareRotation began in this process and
	// that is neither committed nor undone.
	prepared *preparedRotation
}

// Paths inside a state directory.
func (d *Dir) LedgerPath() string         { return filepath.Join(d.Path, "ledger.db") }
func (d *Dir) PublicKeyPath() string      { return filepath.Join(d.Path, "signing-key.pub.pem") }
func (d *Dir) TracePath(id string) string { return filepath.Join(d.Path, "traces", id+".json") }
func (d *Dir) ErasureDir(id string) string {
	return filepath.Join(d.Path, "erasures", id)
}
func (d *Dir) CertificatePath(id string) string {
	return filepath.Join(d.Path, "certificates", id+".dsse.json")
}
func (d *Dir) LogPath() string { return filepath.Join(d.Path, "amnesia.log") }

// MasterKeyPath is the master key that wraps subjects' data keys when
// crypto-shredding is on (package shred): 32 random bytes, mode 0600.
func (d *Dir) MasterKeyPath() string { return filepath.Join(d.Path, "master.key") }

// LedgerSpec is what lineage.Open takes: the configured ledger (a PostgreSQL
// URL, or a SQLite path resolved against the state directory), or
// LedgerPath when none is configured.
func (d *Dir) LedgerSpec() string {
	l := ""
	if d.Config != nil {
		l = d.Config.Ledger
	}
	switch {
	case l == "":
		return d.LedgerPath()
	case lineage.IsPostgresDSN(l) || filepath.IsAbs(l):
		return l
	}
	return filepath.Join(d.Path, l)
}

// Init creates a new state directory at path with a fresh pepper, signing
// key and cfg (DefaultConfig when nil). It refuses to overwrite an existing
// installation: a new pepper would orphan every recorded subject.
func Init(path string, cfg *Config) (*Dir, error) {
	if _, err := os.Stat(filepath.Join(path, "pepper")); err == nil {
		return nil, fmt.Errorf("init %s: already initialised (a new pepper would orphan every recorded subject)", path)
	}
	if cfg == nil {
		cfg = DefaultConfig()
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("init %s: %w", path, err)
	}
	if cfg.Secrets.external() {
		if _, err := os.Stat(filepath.Join(path, "amnesia.yaml")); err == nil {
			return nil, fmt.Errorf("init %s: already initialised (amnesia.yaml exists)", path)
		}
	}
	ctx := context.Background()
	pepperSrc, keySrc, err := sources(path, cfg)
	if err != nil {
		return nil, fmt.Errorf("init %s: %w", path, err)
	}
	for _, sub := range []string{"", "traces", "erasures", "certificates"} {
		if err := os.MkdirAll(filepath.Join(path, sub), 0o700); err != nil {
			return nil, fmt.Errorf("init %s: %w", path, err)
		}
	}
	pepper := make([]byte, subject.PepperSize)
	if _, err := rand.Read(pepper); err != nil {
		return nil, fmt.Errorf("init: %w", err)
	}
	if pepperSrc != nil {
		// Another host may have made it already: the same pepper joins
		// this state directory to that installation.
		b, err := initSecret(ctx, pepperSrc, "pepper", "32 random bytes, e.g. `head -c 32 /dev/urandom | base64`", newPepper)
		if err != nil {
			return nil, fmt.Errorf("init: %w", err)
		}
		if pepper, err = decodePepper(b, pepperSrc.Describe()); err != nil {
			return nil, fmt.Errorf("init: %w", err)
		}
	}
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("init: %w", err)
	}
	privPEM, err := certificate.EncodePrivateKeyPEM(priv)
	if err != nil {
		return nil, fmt.Errorf("init: %w", err)
	}
	if keySrc != nil {
		b, err := initSecret(ctx, keySrc, "signing key", "a PKCS#8 PEM Ed25519 key, e.g. `openssl genpkey -algorithm ed25519`", func() ([]byte, error) { return privPEM, nil })
		if err != nil {
			return nil, fmt.Errorf("init: %w", err)
		}
		if priv, err = certificate.ParsePrivateKeyPEM(b); err != nil {
			return nil, fmt.Errorf("init: signing key from %s: %w", keySrc.Describe(), err)
		}
		pub = priv.Public().(ed25519.PublicKey)
	}
	pubPEM, err := certificate.EncodePublicKeyPEM(pub)
	if err != nil {
		return nil, fmt.Errorf("init: %w", err)
	}
	cfgBytes, err := cfg.Source()
	if err != nil {
		return nil, fmt.Errorf("init: %w", err)
	}
	ring, err := certificate.NewKeyring(pub, time.Now()).Encode()
	if err != nil {
		return nil, fmt.Errorf("init: %w", err)
	}
	type file struct {
		name string
		data []byte
	}
	files := []file{
		{"amnesia.yaml", cfgBytes},
		{"signing-key.pem", privPEM},
		{"signing-key.pub.pem", pubPEM},
		{"keyring.json", ring},
		{"pepper", pepper}, // last: its presence marks a complete installation
	}
	if cfg.Secrets.external() {
		// Secrets from their sources are never copied into the state
		// directory; amnesia.yaml, last, marks a complete installation.
		files = []file{{"signing-key.pub.pem", pubPEM}, {"keyring.json", ring}}
		if pepperSrc == nil {
			files = append(files, file{"pepper", pepper})
		}
		if keySrc == nil {
			files = append(files, file{"signing-key.pem", privPEM})
		}
		files = append(files, file{"amnesia.yaml", cfgBytes})
	}
	for _, f := range files {
		if err := WriteFileAtomic(filepath.Join(path, f.name), f.data); err != nil {
			return nil, fmt.Errorf("init: %w", err)
		}
	}
	return Open(path)
}

// Open opens an existing state directory. The pepper and the signing key
// are read from the sources amnesia.yaml names (secrets:), by default from
// the directory itself.
func Open(path string) (*Dir, error) {
	cfg, err := LoadConfig(filepath.Join(path, "amnesia.yaml"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("open state %s: %w", path, ErrNotInitialized)
	}
	if err != nil {
		return nil, fmt.Errorf("open state %s: %w", path, err)
	}
	ctx := context.Background()
	pepperSrc, keySrc, err := sources(path, cfg)
	if err != nil {
		return nil, fmt.Errorf("open state %s: %w", path, err)
	}
	pepper, err := loadPepper(ctx, path, pepperSrc)
	if err != nil {
		return nil, fmt.Errorf("open state %s: %w", path, err)
	}
	keyer, err := subject.NewKeyer(pepper)
	if err != nil {
		return nil, fmt.Errorf("open state %s: %w", path, err)
	}
	priv, version, err := loadKey(ctx, path, keySrc)
	if err != nil {
		return nil, fmt.Errorf("open state %s: %w", path, err)
	}
	for _, sub := range []string{"traces", "erasures", "certificates"} {
		if err := os.MkdirAll(filepath.Join(path, sub), 0o700); err != nil {
			return nil, fmt.Errorf("open state %s: %w", path, err)
		}
	}
	return &Dir{Path: path, Config: cfg, Keyer: keyer, Key: priv, KeyVersion: version, keySrc: keySrc}, nil
}

// WriteFileAtomic writes data to path with mode 0600 so that readers see the
// old file or the whole new one: temp file, fsync, rename, fsync directory
// (atomicfile.WriteFile).
func WriteFileAtomic(path string, data []byte) error {
	return atomicfile.WriteFile(path, data, 0o600)
}

// WriteFileAtomicMode is WriteFileAtomic with the file's mode given.
func WriteFileAtomicMode(path string, data []byte, mode os.FileMode) error {
	return atomicfile.WriteFile(path, data, mode)
}

// SyncDir fsyncs a directory so that a rename or unlink in it is durable
// (atomicfile.SyncDir).
func SyncDir(dir string) error { return atomicfile.SyncDir(dir) }
