package subject

// Free text written by an operator (an erasure's reason, a worker name) ends
// up in certificates, journals, the queue and logs, which must hold no
// personal data. CheckFreeText refuses text that looks like it holds some;
// CheckNotSubject and Keyer.CheckNotSubject refuse text that names the
// subject being erased. Both are guards against mistakes, not proofs: a name
// or an address in prose is not recognised unless it is the subject's id.

import (
	"errors"
	"math/big"
	"regexp"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// ErrPersonalData is matched (errors.Is) by every *PersonalDataError.
var ErrPersonalData = errors.New("personal data in free text")

// Kinds of personal data CheckFreeText and CheckNotSubject recognise.
const (
	KindSubject = "the identifier of the subject being erased"
	KindEmail   = "an e-mail address"
	KindPhone   = "a phone number"
	KindIBAN    = "an IBAN"
	KindCard    = "a payment card number"
	KindIP      = "an IP address"
)

// PersonalDataError says which field holds which kind of personal data. It
// never holds the text itself.
type PersonalDataError struct {
	Field string // e.g. "--reason"
	Kind  string // one of the Kind constants
}

func (e *PersonalDataError) Error() string {
	hint := "use a ticket or request reference (for example DSR-1234) instead"
	if e.Kind == KindPhone {
		hint += "; a ticket number of 7 or more digits needs a prefix, such as DSR-1234567"
	}
	return e.Field + " looks like it holds " + e.Kind + ", which would be written to the certificate, journal or log; " + hint
}

// Is makes errors.Is(err, ErrPersonalData) true.
func (e *PersonalDataError) Is(target error) bool { return target == ErrPersonalData }

var (
	reEmail = regexp.MustCompile(`[\p{L}\p{N}._%+'-]+@[\p{L}\p{N}-]+(?:\.[\p{L}\p{N}-]+)*\.\p{L}{2,}`)
	// Dates and times are masked before digit runs are counted: "2026-12-01"
	// is not a phone number.
	reDate = regexp.MustCompile(`\b\d{4}[-./]\d{1,2}[-./]\d{1,2}(?:T\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?|\b\d{1,2}[./-]\d{1,2}[./-]\d{4}\b`)
	reTime = regexp.MustCompile(`\b\d{1,2}:\d{2}(?::\d{2})?\b`)
	reIPv4 = regexp.MustCompile(`\b(?:25[0-5]|2[0-4]\d|1?\d?\d)(?:\.(?:25[0-5]|2[0-4]\d|1?\d?\d)){3}\b`)
	// A digit run: digit groups joined by at most two separators among
	// space - . / ( ), optionally after "+" or "(".
	reDigits = regexp.MustCompile(`[+(]?\d+(?:[ \-./()]{1,2}\d+)*`)
	reIBAN   = regexp.MustCompile(`(?i)\b[a-z]{2}\d{2}(?: ?[a-z0-9]){11,30}\b`)
)

// CheckFreeText returns a *PersonalDataError when text looks like it holds an
// e-mail address, a phone number (7 to 15 digits, alone or joined by spaces,
// dashes, dots, slashes or parentheses; dates, times and numbers after a
// letter prefix such as JIRA-1234567 are not), an IBAN (mod-97 checked), a
// payment card number (13 to 19 digits, Luhn checked) or an IPv4 address.
// field names the text in the error, which never echoes the text.
func CheckFreeText(field, text string) error {
	if kind := personalKind(norm.NFKC.String(text)); kind != "" {
		return &PersonalDataError{Field: field, Kind: kind}
	}
	return nil
}

func personalKind(s string) string {
	if reEmail.MatchString(s) {
		return KindEmail
	}
	if hasIBAN(s) {
		return KindIBAN
	}
	if reIPv4.MatchString(s) {
		return KindIP
	}
	masked := reDate.ReplaceAllStringFunc(s, mask)
	masked = reTime.ReplaceAllStringFunc(masked, mask)
	for _, loc := range reDigits.FindAllStringIndex(masked, -1) {
		run := masked[loc[0]:loc[1]]
		if prefixed(masked[:loc[0]]) {
			continue // a reference such as JIRA-1234567 or INC0012345
		}
		if loc[1] < len(masked) && isAlnum(rune(masked[loc[1]])) {
			continue // digits glued to letters: 12345678abc
		}
		d := digitsOnly(run)
		switch {
		case len(d) >= 13 && len(d) <= 19 && luhn(d) && !strings.ContainsAny(run, "+()./"):
			return KindCard
		case len(d) >= 7 && len(d) <= 15:
			return KindPhone
		}
	}
	return ""
}

// mask replaces a date or time with letters, so that it neither counts as
// digits nor joins the digits around it.
func mask(s string) string { return strings.Repeat("x", len(s)) }

// prefixed reports whether the text before a digit run ends in a letter, or
// in a letter and one of - _ # (a ticket reference's prefix).
func prefixed(before string) bool {
	if before == "" {
		return false
	}
	r := rune(before[len(before)-1])
	if r == '-' || r == '_' || r == '#' {
		before = before[:len(before)-1]
		if before == "" {
			return false
		}
		r = rune(before[len(before)-1])
	}
	return isAlnum(r) || r >= 0x80 // a multi-byte letter
}

func isAlnum(r rune) bool { return r < 0x80 && (unicode.IsLetter(r) || unicode.IsDigit(r)) }

func digitsOnly(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

func luhn(d string) bool {
	sum := 0
	for i := 0; i < len(d); i++ {
		n := int(d[len(d)-1-i] - '0')
		if i%2 == 1 {
			n *= 2
			if n > 9 {
				n -= 9
			}
		}
		sum += n
	}
	return sum%10 == 0
}

// hasIBAN reports whether s holds an IBAN: a country code, two check digits
// and 11 to 30 letters or digits (in groups or not) whose mod-97 is 1. Every
// prefix of a match ending at a group boundary is tried, so that words after
// the IBAN do not hide it.
func hasIBAN(s string) bool {
	for _, m := range reIBAN.FindAllString(s, -1) {
		groups := strings.Split(m, " ")
		acc := ""
		for _, g := range groups {
			acc += strings.ToUpper(g)
			if len(acc) >= 15 && len(acc) <= 34 && ibanValid(acc) {
				return true
			}
		}
		if c := strings.ReplaceAll(strings.ToUpper(m), " ", ""); len(c) <= 34 && ibanValid(c) {
			return true
		}
	}
	return false
}

func ibanValid(s string) bool {
	if len(s) < 15 || len(s) > 34 {
		return false
	}
	r := s[4:] + s[:4]
	var b strings.Builder
	for _, c := range r {
		switch {
		case c >= '0' && c <= '9':
			b.WriteRune(c)
		case c >= 'A' && c <= 'Z':
			b.WriteString(big.NewInt(int64(c - 'A' + 10)).String())
		default:
			return false
		}
	}
	n, ok := new(big.Int).SetString(b.String(), 10)
	return ok && new(big.Int).Mod(n, big.NewInt(97)).Int64() == 1
}

// maxSpan is the most tokens a candidate substring spans: enough for ids
// such as "1 84 12 76 451 103 46" or "17 Rue de la Paix, 75002 Paris".
const maxSpan = 10

// maxPunct is the most punctuation characters a candidate takes in from
// either side of its tokens.
const maxPunct = 4

// candidates returns the substrings of text that could be a subject id:
// every run of up to maxSpan consecutive tokens (letters, digits and marks,
// split on white space and punctuation), as it stands in the text, and also
// with up to four characters of the punctuation right before and after it
// ("+44…", "@handle", "…@example.org>").
// The whole text is a candidate too.
func candidates(text string, fn func(string) bool) bool {
	s := norm.NFKC.String(text)
	if fn(s) {
		return true
	}
	type span struct{ start, end int }
	var toks []span
	in := false
	for i, r := range s {
		word := unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r)
		switch {
		case word && !in:
			toks = append(toks, span{i, i})
			in = true
		case !word && in:
			toks[len(toks)-1].end = i
			in = false
		}
	}
	if in {
		toks[len(toks)-1].end = len(s)
	}
	// Punctuation (not white space) next to a token.
	left := func(i int) int {
		for i > 0 {
			r := rune(s[i-1])
			if r >= 0x80 || unicode.IsSpace(r) || unicode.IsLetter(r) || unicode.IsDigit(r) {
				break
			}
			i--
		}
		return i
	}
	right := func(i int) int {
		for i < len(s) {
			r := rune(s[i])
			if r >= 0x80 || unicode.IsSpace(r) || unicode.IsLetter(r) || unicode.IsDigit(r) {
				break
			}
			i++
		}
		return i
	}
	for i := range toks {
		for j := i; j < len(toks) && j < i+maxSpan; j++ {
			a, b := toks[i].start, toks[j].end
			// Every start in the punctuation before the span ("(@x" gives
			// "(@x", "@x" and "x"), every end in the punctuation after it.
			for la := a; la >= left(a) && a-la <= maxPunct; la-- {
				for rb := b; rb <= right(b) && rb-b <= maxPunct; rb++ {
					if fn(s[la:rb]) {
						return true
					}
				}
			}
		}
	}
	return false
}

// CheckNotSubject returns a *PersonalDataError when text holds the raw
// subject id: its normalised form anywhere in the normalised text (ids of
// six or more characters), the
// digits of a phone-number id among the text's digits, or any candidate
// substring (see Keyer.CheckNotSubject) that normalises to it.
func CheckNotSubject(field, text, raw string) error {
	n := Normalize(raw)
	if n == "" {
		return nil
	}
	err := &PersonalDataError{Field: field, Kind: KindSubject}
	nt := Normalize(text)
	if len([]rune(n)) >= 6 && strings.Contains(nt, n) {
		return err
	}
	if d := PhoneDigits(raw); d != "" && strings.Contains(digitsOnly(text), d) {
		return err
	}
	if candidates(text, func(c string) bool { return Normalize(c) == n }) {
		return err
	}
	return nil
}

// PhoneDigits returns the digits of a raw id that looks like a phone number
// (7 to 15 digits and nothing but + - . / ( ) and spaces besides), or "".
func PhoneDigits(raw string) string {
	d := digitsOnly(raw)
	if len(d) < 7 || len(d) > 15 {
		return ""
	}
	for _, r := range raw {
		if !(r >= '0' && r <= '9') && !strings.ContainsRune("+-./() ", r) {
			return ""
		}
	}
	return d
}

// CheckNotSubject returns a *PersonalDataError when text holds the id of the
// subject whose key in scope is subj. The raw id is not known here (amnesia
// keeps only keyed subjects), so every candidate substring of the text (each
// token and each run of up to ten consecutive tokens, with and without the
// punctuation around it) is keyed in scope and compared with subj. An id is
// found when it stands in the text delimited by white space or punctuation;
// one glued to other letters ("xalice@example.org") is not.
func (k *Keyer) CheckNotSubject(field, text, scope string, subj Key) error {
	if subj.IsZero() {
		return nil
	}
	if candidates(text, func(c string) bool {
		got, err := k.Key(scope, c)
		return err == nil && got == subj
	}) {
		return &PersonalDataError{Field: field, Kind: KindSubject}
	}
	return nil
}
