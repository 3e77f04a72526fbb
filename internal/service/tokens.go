package service

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/amnesia-dev/amnesia/internal/atomicfile"
	"github.com/amnesia-dev/amnesia/subject"
)

// TokenPrefix starts every token secret.
const TokenPrefix = "amn_"

// TokenInfo is one token as <state>/tokens.json keeps it: never the secret,
// only its SHA-256.
type TokenInfo struct {
	ID      string     `json:"id"`
	Name    string     `json:"name,omitempty"`
	Role    Role       `json:"role"`
	Scopes  []string   `json:"scopes"`
	SHA256  string     `json:"sha256"`
	Created time.Time  `json:"created"`
	Revoked *time.Time `json:"revoked,omitempty"`
}

type tokenFile struct {
	Version string      `json:"version"`
	Tokens  []TokenInfo `json:"tokens"`
}

const tokenFileVersion = "amnesia.tokens/v1"

// TokensPath is where a state directory keeps its tokens.
func TokensPath(stateDir string) string { return filepath.Join(stateDir, "tokens.json") }

// ValidRole reports whether r is a role.
func ValidRole(r Role) bool { return r == RoleCapture || r == RoleOperator || r == RoleAuditor }

// CheckScope checks a scope name given in a token or a request.
func CheckScope(field, scope string) error {
	if scope == "" || len(scope) > 128 {
		return Invalid(field, "a scope is 1 to 128 characters")
	}
	for _, r := range scope {
		if r < 0x20 || r == 0x7f || r == '/' || r == '\\' {
			return Invalid(field, "a scope holds no control characters or slashes")
		}
	}
	return nil
}

func tokenHash(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// lockTokens takes an exclusive flock on <state>/tokens.lock.
func lockTokens(stateDir string) (func(), error) {
	f, err := os.OpenFile(filepath.Join(stateDir, "tokens.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock tokens: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock tokens: %w", err)
	}
	return func() { f.Close() }, nil
}

func readTokens(stateDir string) ([]TokenInfo, error) {
	b, err := os.ReadFile(TokensPath(stateDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read tokens: %w", err)
	}
	var f tokenFile
	if err := json.Unmarshal(b, &f); err != nil || f.Version != tokenFileVersion {
		return nil, fmt.Errorf("read tokens: tokens.json is not an %s file; restore it from a backup or move it away and create new tokens", tokenFileVersion)
	}
	return f.Tokens, nil
}

func writeTokens(stateDir string, ts []TokenInfo) error {
	if ts == nil {
		ts = []TokenInfo{}
	}
	b, err := json.MarshalIndent(tokenFile{Version: tokenFileVersion, Tokens: ts}, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(TokensPath(stateDir), append(b, '\n'), 0o600)
}

// CreateToken creates a token with a role and the scopes it may touch, and
// returns its secret: shown once, stored only as its SHA-256.
func CreateToken(stateDir, name string, role Role, scopes []string, now time.Time) (secret string, info TokenInfo, err error) {
	if !ValidRole(role) {
		return "", TokenInfo{}, Invalid("role", "want capture, operator or auditor")
	}
	if len(scopes) == 0 {
		return "", TokenInfo{}, Invalid("scope", "give at least one scope (tenant) the token may touch")
	}
	for _, s := range scopes {
		if err := CheckScope("scope", s); err != nil {
			return "", TokenInfo{}, err
		}
	}
	if err := subject.CheckFreeText("the token name", name); err != nil {
		return "", TokenInfo{}, Invalid("name", "looks like personal data: name a token after its use, e.g. ingest-service")
	}
	if len(name) > 100 {
		return "", TokenInfo{}, Invalid("name", "at most 100 characters")
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", TokenInfo{}, err
	}
	secret = TokenPrefix + base64.RawURLEncoding.EncodeToString(raw)
	idb := make([]byte, 4)
	if _, err := rand.Read(idb); err != nil {
		return "", TokenInfo{}, err
	}
	sc := slices.Clone(scopes)
	slices.Sort(sc)
	info = TokenInfo{ID: "tok_" + hex.EncodeToString(idb), Name: name, Role: role, Scopes: slices.Compact(sc), SHA256: tokenHash(secret), Created: now.UTC()}
	unlock, err := lockTokens(stateDir)
	if err != nil {
		return "", TokenInfo{}, err
	}
	defer unlock()
	ts, err := readTokens(stateDir)
	if err != nil {
		return "", TokenInfo{}, err
	}
	if err := writeTokens(stateDir, append(ts, info)); err != nil {
		return "", TokenInfo{}, fmt.Errorf("write tokens: %w", err)
	}
	return secret, info, nil
}

// ListTokens returns every token (without secrets), oldest first.
func ListTokens(stateDir string) ([]TokenInfo, error) { return readTokens(stateDir) }

// RevokeToken revokes a token by id: it is refused from then on (a running
// serve re-reads tokens.json when it changes).
func RevokeToken(stateDir, id string, now time.Time) error {
	unlock, err := lockTokens(stateDir)
	if err != nil {
		return err
	}
	defer unlock()
	ts, err := readTokens(stateDir)
	if err != nil {
		return err
	}
	for i := range ts {
		if ts[i].ID == id {
			if ts[i].Revoked == nil {
				t := now.UTC()
				ts[i].Revoked = &t
			}
			return writeTokens(stateDir, ts)
		}
	}
	return fmt.Errorf("no token %s: see 'amnesia tokens list': %w", id, ErrNotFound)
}

// tokenCache holds the tokens of tokens.json, reloaded when the file changes.
type tokenCache struct {
	stateDir string
	mu       sync.Mutex
	mod      time.Time
	size     int64
	byHash   map[string]TokenInfo
}

func (c *tokenCache) lookup(secret string) (TokenInfo, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	{ // a stat per lookup: a token created or revoked counts at once
		fi, err := os.Stat(TokensPath(c.stateDir))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			c.byHash, c.mod, c.size = map[string]TokenInfo{}, time.Time{}, 0
		case err != nil:
			return TokenInfo{}, false, err
		case c.byHash == nil || !fi.ModTime().Equal(c.mod) || fi.Size() != c.size:
			ts, err := readTokens(c.stateDir)
			if err != nil {
				return TokenInfo{}, false, err
			}
			m := make(map[string]TokenInfo, len(ts))
			for _, t := range ts {
				m[t.SHA256] = t
			}
			c.byHash, c.mod, c.size = m, fi.ModTime(), fi.Size()
		}
	}
	t, ok := c.byHash[tokenHash(secret)]
	return t, ok && t.Revoked == nil, nil
}

// Authenticate resolves a bearer token. A missing, malformed, unknown or
// revoked token is ErrUnauthorized.
func (s *Service) Authenticate(token string) (*Principal, error) {
	if !strings.HasPrefix(token, TokenPrefix) || len(token) > 100 {
		return nil, ErrUnauthorized
	}
	t, ok, err := s.tokens.lookup(token)
	if err != nil {
		s.log.Error("token store unreadable", "err", err)
		return nil, ErrUnavailable
	}
	if !ok {
		return nil, ErrUnauthorized
	}
	return &Principal{TokenID: t.ID, Name: t.Name, Role: t.Role, Scopes: slices.Clone(t.Scopes)}, nil
}

// can reports whether p's role allows an action needing one of roles.
func (p *Principal) can(roles ...Role) bool {
	return p != nil && slices.Contains(roles, p.Role)
}

// allow checks p's role and resolves and checks the scope: an empty scope is
// the token's only scope, or else the installation's default.
func (s *Service) allow(p *Principal, scope string, roles ...Role) (string, error) {
	if p == nil {
		return "", ErrUnauthorized
	}
	if !p.can(roles...) {
		return "", fmt.Errorf("%w: a %s token may not do this", ErrForbidden, p.Role)
	}
	if scope == "" {
		if len(p.Scopes) == 1 {
			scope = p.Scopes[0]
		} else {
			scope = s.dir.Config.Scope
		}
	} else if err := CheckScope("scope", scope); err != nil {
		return "", err
	}
	if !slices.Contains(p.Scopes, scope) {
		return "", fmt.Errorf("%w: the token may not touch this scope", ErrForbidden)
	}
	return scope, nil
}
