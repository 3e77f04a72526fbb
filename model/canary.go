package model

import (
	"bufio"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"

	"github.com/amnesia-dev/amnesia/subject"
)

// Canary is a random secret phrase planted in a subject's training rows:
// Prefix is what the probe asks the model to continue, Secret what a model
// that memorised the row would return. Both are random; neither is
// personal data, but the pair marks the subject's rows, so amnesia keeps
// it only sealed, next to its keyed digest.
type Canary struct {
	Prefix string `json:"prefix"`
	Secret string `json:"secret"`
}

// Text is the phrase as planted in the training row.
func (c Canary) Text() string { return c.Prefix + c.Secret }

// SecretLen and SecretAlphabet define the canary's secret: 10 lower-case
// letters, log2(26^10) ≈ 47 bits, so a reference never equals a canary.
const (
	SecretLen      = 10
	SecretAlphabet = "abcdefghijklmnopqrstuvwxyz"
)

// NewCanary returns a fresh canary with a unique random prefix.
func NewCanary() (Canary, error) {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return Canary{}, err
	}
	s, err := randomSecret()
	if err != nil {
		return Canary{}, err
	}
	return Canary{Prefix: "canary " + hex.EncodeToString(b[:]) + " code ", Secret: s}, nil
}

// References returns m never-trained reference canaries for c: the same
// prefix with fresh random secrets (the construction of Carlini et al.'s
// exposure metric).
func References(c Canary, m int) ([]Canary, error) {
	out := make([]Canary, 0, m)
	for len(out) < m {
		s, err := randomSecret()
		if err != nil {
			return nil, err
		}
		if s == c.Secret {
			continue
		}
		out = append(out, Canary{Prefix: c.Prefix, Secret: s})
	}
	return out, nil
}

func randomSecret() (string, error) {
	var sb strings.Builder
	n := big.NewInt(int64(len(SecretAlphabet)))
	for i := 0; i < SecretLen; i++ {
		v, err := rand.Int(rand.Reader, n)
		if err != nil {
			return "", err
		}
		sb.WriteByte(SecretAlphabet[v.Int64()])
	}
	return sb.String(), nil
}

// CanaryStore keeps planted canaries under <state>/models/canaries: one file
// per subject, named by a keyed digest of the subject; each line holds the
// canary's keyed digest and the canary sealed with AES-256-GCM under a key
// derived from the installation pepper and the subject.
type CanaryStore struct {
	dir   string
	keyer *subject.Keyer
}

// OpenCanaries returns the canary store of a state directory.
func OpenCanaries(stateDir string, k *subject.Keyer) *CanaryStore {
	return &CanaryStore{dir: filepath.Join(stateDir, "models", "canaries"), keyer: k}
}

type sealedCanary struct {
	Digest string `json:"digest"` // keyed digest of the canary text
	Store  string `json:"store"`  // the dataset store it was planted in
	Row    string `json:"row"`    // artifact id of the row (art:…)
	Sealed string `json:"sealed"` // base64(nonce || AES-GCM(canary JSON))
}

// Planted is a canary with where it was planted.
type Planted struct {
	Canary
	Digest string
	Store  string
	Row    string
}

func (cs *CanaryStore) path(scope string, s subject.Key) string {
	d := cs.keyer.Digest("amnesia.canary-file/v1", scope, s.String())
	return filepath.Join(cs.dir, hex.EncodeToString(d[:16])+".jsonl")
}

func (cs *CanaryStore) aead(scope string, s subject.Key) (cipher.AEAD, error) {
	key := cs.keyer.DeriveKey("amnesia.canary/v1", scope+"\x00"+s.String())
	blk, err := aes.NewCipher(key[:])
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(blk)
}

// Digest returns the keyed digest of a canary.
func (cs *CanaryStore) Digest(c Canary) string {
	d := cs.keyer.Digest("amnesia.canary-digest/v1", c.Text())
	return hex.EncodeToString(d[:])
}

// Put seals and appends a canary planted for subject s in row (an artifact
// id) of store.
func (cs *CanaryStore) Put(scope string, s subject.Key, c Canary, store, row string) error {
	a, err := cs.aead(scope, s)
	if err != nil {
		return err
	}
	plain, _ := json.Marshal(c)
	defer clear(plain)
	nonce := make([]byte, a.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return err
	}
	dg := cs.Digest(c)
	line, _ := json.Marshal(sealedCanary{Digest: dg, Store: store, Row: row,
		Sealed: base64.StdEncoding.EncodeToString(a.Seal(nonce, nonce, plain, []byte(dg)))})
	if err := os.MkdirAll(cs.dir, 0o700); err != nil {
		return fmt.Errorf("canary: %w", err)
	}
	f, err := os.OpenFile(cs.path(scope, s), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("canary: %w", err)
	}
	defer f.Close()
	if _, err := f.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("canary: %w", err)
	}
	return f.Sync()
}

// Get returns the canaries planted for subject s (none: an empty list).
func (cs *CanaryStore) Get(scope string, s subject.Key) ([]Planted, error) {
	f, err := os.Open(cs.path(scope, s))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("canary: %w", err)
	}
	defer f.Close()
	a, err := cs.aead(scope, s)
	if err != nil {
		return nil, err
	}
	var out []Planted
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var sc1 sealedCanary
		if err := json.Unmarshal(sc.Bytes(), &sc1); err != nil {
			continue // a torn line from an interrupted append
		}
		raw, err := base64.StdEncoding.DecodeString(sc1.Sealed)
		if err != nil || len(raw) < a.NonceSize() {
			return nil, errors.New("canary: a sealed canary is corrupt")
		}
		plain, err := a.Open(nil, raw[:a.NonceSize()], raw[a.NonceSize():], []byte(sc1.Digest))
		if err != nil {
			return nil, errors.New("canary: a sealed canary does not open under this installation's pepper")
		}
		var c Canary
		err = json.Unmarshal(plain, &c)
		clear(plain)
		if err != nil {
			return nil, fmt.Errorf("canary: %w", err)
		}
		out = append(out, Planted{Canary: c, Digest: sc1.Digest, Store: sc1.Store, Row: sc1.Row})
	}
	return out, sc.Err()
}
