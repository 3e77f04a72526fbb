package capture

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"

	"github.com/amnesia-dev/amnesia/subject"
)

// KeyError is returned (errors.Is ErrKeyIsPersonal) when a store key or a
// parent key holds a subject's identifier. The ledger keeps keys in clear,
// so keys must not be personal data. It never holds the key or the id.
type KeyError struct {
	Which    string // "key" or "parent key"
	Encoding string // how the id was found: "as written", "percent-encoded", "base64", "hex", "phone digits", "keyed token"
	Mention  bool   // the id is a mentioned third party's, not the owner's
}

func (e *KeyError) Error() string {
	who := "the subject identifier"
	if e.Mention {
		who = "the identifier of a mentioned person"
	}
	return "store " + e.Which + " contains " + who + " (" + e.Encoding + "); the ledger keeps keys in clear: use an opaque key, such as a random id or your own record number"
}

// Is makes errors.Is(err, ErrKeyIsPersonal) true.
func (e *KeyError) Is(target error) bool { return target == ErrKeyIsPersonal }

// minIDRunes is the shortest normalised id searched for inside a key: a
// shorter one ("bob") matches too many unrelated keys.
const minIDRunes = 4

// keyEncoding reports how key holds the raw subject id, or "" when it is
// not found. Searched for, in the key and in the key after percent-decoding
// (once and twice, "+" read as "+" and as a space):
//
//   - the id as written, in any case, or after subject normalisation;
//   - the digits of a phone-number id (7 to 15 digits and + - . / ( ) or
//     spaces only), among the key's digits with separators removed;
//   - every run of base64 characters (standard and URL alphabets, with or
//     without padding) decoded at each of the four alignments, and every
//     run of hex digits decoded at both alignments, searched for the id's
//     bytes in any case and normalised.
//
// Not searched for: other encodings (base32, URL-safe hashes, encryption),
// the id split across separate parts of a key, transliterations, and ids
// shorter than four characters.
func keyEncoding(key, raw string) string {
	n := subject.Normalize(raw)
	if len([]rune(n)) < minIDRunes {
		return ""
	}
	ids := idForms(raw, n)
	phone := subject.PhoneDigits(raw)
	forms := []struct{ name, s string }{{"as written", key}}
	for _, plus := range []bool{false, true} {
		s := key
		for i := 0; i < 2; i++ {
			d, changed := percentDecode(s, plus)
			if !changed {
				break
			}
			s = d
			forms = append(forms, struct{ name, s string }{"percent-encoded", s})
		}
	}
	for _, f := range forms {
		if holds([]byte(f.s), ids, n) {
			return f.name
		}
		if phone != "" && strings.Contains(digitsOnly(f.s), phone) {
			return "phone digits"
		}
	}
	for _, f := range forms {
		for _, alpha := range []struct {
			chars string
			enc   *base64.Encoding
		}{
			{"+/", base64.RawStdEncoding},
			{"-_", base64.RawURLEncoding},
		} {
			for _, run := range runs(f.s, func(c byte) bool { return isAlnum(c) || strings.IndexByte(alpha.chars, c) >= 0 }) {
				for off := 0; off < 4 && off < len(run); off++ {
					r := run[off:]
					if len(r)%4 == 1 {
						r = r[:len(r)-1]
					}
					if dec, err := alpha.enc.DecodeString(r); err == nil && holds(dec, ids, n) {
						return "base64"
					}
				}
			}
		}
		for _, run := range runs(f.s, isHex) {
			for off := 0; off < 2 && off < len(run); off++ {
				r := run[off:]
				r = r[:len(r)/2*2]
				if dec, err := hex.DecodeString(r); err == nil && holds(dec, ids, n) {
					return "hex"
				}
			}
		}
	}
	return ""
}

// idForms are the byte forms of an id looked for: as given, lower case,
// normalised.
func idForms(raw, n string) [][]byte {
	return [][]byte{[]byte(raw), []byte(strings.ToLower(raw)), []byte(n)}
}

// holds reports whether b contains the id in one of its forms, or in any
// case, or after normalisation.
func holds(b []byte, ids [][]byte, n string) bool {
	low := bytes.ToLower(b)
	for _, id := range ids {
		if bytes.Contains(b, id) || bytes.Contains(low, bytes.ToLower(id)) {
			return true
		}
	}
	return strings.Contains(subject.Normalize(string(b)), n)
}

// percentDecode decodes every valid %XX escape (and "+" as a space when
// plus is set), leaving anything else as it is.
func percentDecode(s string, plus bool) (string, bool) {
	var b strings.Builder
	changed := false
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			v, _ := hex.DecodeString(s[i+1 : i+3])
			b.WriteByte(v[0])
			i += 2
			changed = true
		case s[i] == '+' && plus:
			b.WriteByte(' ')
			changed = true
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String(), changed
}

// runs returns the maximal runs of bytes for which in is true.
func runs(s string, in func(byte) bool) []string {
	var out []string
	start := -1
	for i := 0; i <= len(s); i++ {
		if i < len(s) && in(s[i]) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			out = append(out, s[start:i])
			start = -1
		}
	}
	return out
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func digitsOnly(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] >= '0' && s[i] <= '9' {
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// checkKey returns a *KeyError when key holds the raw id (when known) or,
// for an owner known only by its key, a token of key that keys to it.
func (r *Recorder) checkKey(which, key, raw string, owner subject.Key, mention bool) error {
	if key == "" {
		return nil
	}
	if raw != "" {
		if enc := keyEncoding(key, raw); enc != "" {
			return &KeyError{Which: which, Encoding: enc, Mention: mention}
		}
		return nil
	}
	if !owner.IsZero() {
		// The raw id is not known: key every token run of the key.
		var pe *subject.PersonalDataError
		if err := r.keyer.CheckNotSubject(which, key, r.scope, owner); errors.As(err, &pe) {
			return &KeyError{Which: which, Encoding: "keyed token", Mention: mention}
		}
	}
	return nil
}

// checkKeys checks a write's key and parent key against its owner and the
// people it mentions.
func (r *Recorder) checkKeys(key, parentKey, raw string, owner subject.Key, mentions []string) error {
	return r.checkKeysIn(nil, key, parentKey, raw, owner, mentions)
}

// keyCheck is one checkKey call: its outcome depends on nothing else.
type keyCheck struct {
	which, key, raw string
	owner           subject.Key
	mention         bool
}

// keyChecks remembers the outcomes of a batch's key checks: the chunks of
// a batch name their document's key as parent key, and an embedding has
// its chunk's key and owner, so most checks of a batch repeat one already
// made (each owner-only check keys every token run of the key).
type keyChecks map[keyCheck]error

// checkKeysIn is checkKeys, each check made once in memo (nil: no memo).
func (r *Recorder) checkKeysIn(memo keyChecks, key, parentKey, raw string, owner subject.Key, mentions []string) error {
	check := func(c keyCheck) error {
		if memo == nil {
			return r.checkKey(c.which, c.key, c.raw, c.owner, c.mention)
		}
		if err, ok := memo[c]; ok {
			return err
		}
		err := r.checkKey(c.which, c.key, c.raw, c.owner, c.mention)
		memo[c] = err
		return err
	}
	for _, k := range []struct{ which, key string }{{"key", key}, {"parent key", parentKey}} {
		if k.key == "" {
			continue
		}
		if err := check(keyCheck{which: k.which, key: k.key, raw: raw, owner: owner}); err != nil {
			return err
		}
		for _, m := range mentions {
			if err := check(keyCheck{which: k.which, key: k.key, raw: m, mention: true}); err != nil {
				return err
			}
		}
	}
	return nil
}
