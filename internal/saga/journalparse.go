package saga

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// TornLine is a final journal line cut short by a crash in the middle of
// its write: the last line has no newline and does not decode. The journal
// is whole up to Offset.
type TornLine struct {
	Offset int64 // where the torn line starts
	Len    int   // how many bytes of it were written
}

// ParseJournal is the one reader of the journal format. It reads b, the
// bytes of a journal, and never changes anything: openJournal repairs what
// it reports (truncates a torn line), inspection (readEntries, tests,
// reports) never does.
//
// The format: the line JournalVersion, then one JSON JournalEntry per line,
// each linked to the one before by Prev, the Hash of the previous entry
// (the first by ""), and Hash the SHA-256 of the entry without its hash.
// Empty lines are skipped.
//
// err is the first thing that breaks the format, in file order: a first
// line other than JournalVersion, a line that does not decode (other than
// a torn final one), an entry that breaks the hash chain. A journal with an
// error must not be resumed. torn is the torn final line, or nil. entries
// is every line that decodes as an entry, in order, with or without an
// error: when err is nil they form an unbroken chain; with an error they
// are only good for lenient inspection. Empty b has no entries and no
// error.
func ParseJournal(b []byte) (entries []JournalEntry, torn *TornLine, err error) {
	if len(b) == 0 {
		return nil, nil, nil
	}
	lines := bytes.Split(b, []byte("\n"))
	if string(lines[0]) != JournalVersion {
		err = fmt.Errorf("first line is not %q", JournalVersion)
	}
	complete := b[len(b)-1] == '\n'
	prev := ""
	off := 0
	for i, line := range lines {
		start := off
		off += len(line) + 1
		if len(line) == 0 || (i == 0 && string(line) == JournalVersion) {
			continue
		}
		var e JournalEntry
		if jerr := json.Unmarshal(line, &e); jerr != nil {
			if !complete && i == len(lines)-1 {
				torn = &TornLine{Offset: int64(start), Len: len(line)}
			} else if err == nil {
				err = fmt.Errorf("line %d is damaged: %w", i+1, jerr)
			}
			continue
		}
		if err == nil && (e.Prev != prev || e.Hash != e.hash()) {
			err = fmt.Errorf("line %d breaks the hash chain", i+1)
		}
		prev = e.Hash
		entries = append(entries, e)
	}
	return entries, torn, err
}

// hash is the SHA-256 of the entry's JSON without its hash.
func (e JournalEntry) hash() string {
	c := e
	c.Hash = ""
	b, _ := json.Marshal(c)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// hashField ends the JSON of an entry without its hash: Hash is the last
// field of JournalEntry, and never omitted.
const hashField = `"hash":""}`

// line sets e.Hash (hash) and returns e's journal line, json.Marshal's
// encoding of e, from one encoding of the entry instead of two: the hash is
// the SHA-256 of the encoding without it, and the line is that encoding
// with the hash written into its last field.
func (e *JournalEntry) line() ([]byte, error) {
	e.Hash = ""
	b, err := json.Marshal(e)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(b)
	e.Hash = hex.EncodeToString(sum[:])
	if !bytes.HasSuffix(b, []byte(hashField)) {
		return json.Marshal(e) // not reached while Hash is the last field
	}
	out := make([]byte, 0, len(b)+len(e.Hash))
	out = append(out, b[:len(b)-len(`"}`)]...)
	out = append(out, e.Hash...)
	return append(out, `"}`...), nil
}
