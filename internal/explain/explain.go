// Package explain says in plain words what each state short of VERIFIED on
// a certificate means and what to do about it. `amnesia forget`/`erase` and
// `amnesia demo` print from the same table.
package explain

import (
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"

	"github.com/amnesia-dev/amnesia/certificate"
)

// Entry explains one state: a store's residue state (declared_scope[].residue)
// or an artifact's outcome.
type Entry struct {
	State   string // exact state, or a prefix ending in "-" (PENDING-, UNVERIFIED-)
	Meaning string // what the certificate says, in plain words
	Action  string // what to do
}

// Table is every explanation, most specific first: an exact state before
// the prefix that also matches it.
var Table = []Entry{
	{
		State: "UNVERIFIED-physical-not-measured",
		Meaning: "no query path returns these records any more, but a byte scan could not show that their bytes " +
			"are gone from the store's files, so the certificate claims only the logical level for them. Each " +
			"artifact's reason says why: the adapter has no physical probe, amnesia could not read the store's " +
			"files, or the record gave no usable needles (too short or too repetitive, every window of it also " +
			"held by other live records, or its bytes not visible in the files before deletion, so the scan had " +
			"no power).",
		Action: "where the store has no physical probe or amnesia could not read its files, give amnesia read " +
			"access to the store's files, or use an adapter with a physical probe. A record that gave no usable " +
			"needles stays at the logical level: there is nothing to do, and the certificate claims no more.",
	},
	{
		State: "UNVERIFIED-store-failed",
		Meaning: "amnesia could not finish the erasure in this store (it could not be opened, or a step failed), so the " +
			"certificate claims nothing for its records and the ledger keeps them for a later erasure.",
		Action: "fix the store (the error is printed above and in amnesia.log), then run the same command again: " +
			"a new erasure takes the records that are left.",
	},
	{
		State: "UNVERIFIED-managed",
		Meaning: "the database role may not rewrite the table or may not read its files, or the store is a managed " +
			"service (Pinecone) whose storage amnesia cannot read, so the deleted bytes could not be reclaimed or " +
			"their absence could not be measured; for a managed service the store's evidence cites the vendor's own " +
			"deletion commitment, which amnesia does not measure.",
		Action: "PostgreSQL: run the GRANT or ALTER the store's evidence names, then run the same command again " +
			"(docs/postgres.md). A managed service: nothing in amnesia changes this state (docs/pinecone.md).",
	},
	{
		State:   "UNVERIFIED-index-not-rebuilt",
		Meaning: "an index of the table was left invalid after reclaim, so old index pages may still hold the bytes.",
		Action:  "rebuild or drop the index the store's evidence names (docs/postgres.md), then run the same command again.",
	},
	{
		State: "UNVERIFIED-dead-tuples-remain",
		Meaning: "the table still counts dead rows after the rewrite, and nothing older than the delete holds them, " +
			"so amnesia cannot say whose they are.",
		Action: "run the same command again once the writes that made them have settled (docs/postgres.md).",
	},
	{
		State: "UNVERIFIED-app-memory-until-reload",
		Meaning: "the records are gone from the store's files and from every query path amnesia ran, but chromem-go " +
			"keeps every document of a DB in the memory of each process that opened it: an application that loaded " +
			"the DB before the erasure still serves these records until it reloads it. amnesia cannot measure another " +
			"process's memory, so the certificate does not claim it.",
		Action: "restart the application processes that use this chromem-go DB (or have them open it again with " +
			"NewPersistentDB); running the command again does not change this state (docs/stores.md).",
	},
	{
		State: "UNVERIFIED-no-data-dir",
		Meaning: "the records are gone from every query path amnesia ran, and Redis rewrote its AOF and RDB files, but " +
			"amnesia was not given the server's data directory, so it could not read those files to show the bytes are gone.",
		Action: "set data_dir for the store to the Redis server's directory (CONFIG GET dir), readable by amnesia, then " +
			"run the same command again (docs/redis.md).",
	},
	{
		State: "PENDING-aof-rewrite",
		Meaning: "the records were deleted from Redis, but its append-only file was not rewritten within reclaim_wait " +
			"(BGREWRITEAOF still running, or waiting for another background job), so the old file may still hold them.",
		Action: "run the same command again once the server is less busy, or raise reclaim_wait (docs/redis.md).",
	},
	{
		State: "PENDING-rdb-save",
		Meaning: "the records were deleted from Redis, but its RDB snapshot was not written again within reclaim_wait " +
			"(BGSAVE still running, or waiting for another background job), so the last snapshot may still hold them.",
		Action: "run the same command again once the server is less busy, or raise reclaim_wait (docs/redis.md).",
	},
	{
		State:   "UNVERIFIED-",
		Meaning: "amnesia could not measure whether the bytes are gone from this store; the store's evidence says why.",
		Action:  "act on what the evidence names, then run the same command again.",
	},
	{
		State: "PENDING-reclaim-deferred",
		Meaning: "the records were deleted but the store is configured not to reclaim now (reclaim: delete-only), so " +
			"their bytes stay in free space and in the write-ahead log until a later rewrite.",
		Action: "run the reclaim in a maintenance window (reclaim: full), then run the same command again for the " +
			"records the scan still found (docs/postgres.md).",
	},
	{
		State: "PENDING-",
		Meaning: "the records were deleted but the store could not reclaim their bytes yet: something holds them, " +
			"named in the store's evidence (an open transaction, a replication slot, a prepared transaction, or a " +
			"lock or statement timeout).",
		Action: "end or wait out what holds them, then run the same command again: the records the scan still found " +
			"are erased and probed again (docs/postgres.md).",
	},
	{
		State: "UNREACHABLE",
		Meaning: "this configured store could not be opened or reached when the erasure ran. The ledger records " +
			"nothing of this person in it, but nothing about it was checked, so the certificate is not complete " +
			"(unless the store is marked out_of_scope: true).",
		Action: "bring the store back (`amnesia check` says what is wrong), then run the same command again; or, if " +
			"it can never hold this data, set out_of_scope: true for it in amnesia.yaml.",
	},
	{
		State: certificate.Residual,
		Meaning: "after the erasure a query still returned the record, or its bytes were still found in the store's " +
			"files: it is not erased, and the certificate says so with the measurement.",
		Action: "find what keeps it (the store's evidence and the artifact's reason say where: a pinned snapshot, a " +
			"copy the ledger does not know), remove that, then run the same command again.",
	},
	{
		State: certificate.NeedsHuman,
		Meaning: "records of other people mention this person; amnesia never erases another person's data on its own, " +
			"and the certificate lists them by id and owner.",
		Action: "a person must decide, for each, whether to redact the mention in the application, or keep it and " +
			"record why.",
	},
	{
		State: certificate.OutOfScope,
		Meaning: "the ledger records artifacts in a store that is not configured in this installation, so amnesia did " +
			"not act on them.",
		Action: "add the store to amnesia.yaml, then run the same command again.",
	},
}

// For returns the explanation of a state: the entry with the same name, or
// else the longest prefix entry that matches it.
func For(state string) (Entry, bool) {
	var best Entry
	found := false
	for _, e := range Table {
		switch {
		case e.State == state:
			return e, true
		case strings.HasSuffix(e.State, "-") && strings.HasPrefix(state, e.State) && len(e.State) > len(best.State):
			best, found = e, true
		}
	}
	return best, found
}

// Note is one state short of VERIFIED on a certificate, with where it
// applies and its explanation.
type Note struct {
	State  string
	Where  string // the stores it applies to, or how many artifacts
	Text   Entry  // Text.State is the entry that matched
	Stores []string
	// Causes, for UNVERIFIED-physical-not-measured: why the physical level
	// was not reached, as the artifacts' reasons say, with how many each.
	Causes []Cause
}

// Cause is one reason shared by Count artifacts.
type Cause struct {
	Reason string
	Count  int
}

// notPhysical is how decide words a logical-only artifact's reason.
const notPhysical = "physical level not reached: "

var (
	allOfIts = regexp.MustCompile(`\ball \d+ of its\b`)
	ofItsN   = regexp.MustCompile(`\bof its \d+ `)
)

// cause is an artifact's reason without its own counts, so that artifacts
// with the same cause group together.
func cause(reason string) (string, bool) {
	i := strings.Index(reason, notPhysical)
	if i < 0 {
		return "", false
	}
	c := reason[i+len(notPhysical):]
	c = allOfIts.ReplaceAllString(c, "all of its")
	c = ofItsN.ReplaceAllString(c, "of its ")
	return c, true
}

// Notes lists, once each, the states short of VERIFIED in p: the stores'
// residue states (NOT-TOUCHED and VERIFIED are left out) and the artifact
// outcomes RESIDUAL, NEEDS_HUMAN and OUT_OF_SCOPE, in that order.
func Notes(p certificate.Predicate) []Note {
	var out []Note
	idx := map[string]int{}
	add := func(state, store string) {
		i, ok := idx[state]
		if !ok {
			e, _ := For(state)
			idx[state] = len(out)
			out = append(out, Note{State: state, Text: e})
			i = len(out) - 1
		}
		n := &out[i]
		for _, s := range n.Stores {
			if s == store {
				return
			}
		}
		n.Stores = append(n.Stores, store)
	}
	for _, s := range p.DeclaredScope {
		if s.Residue == certificate.Verified || s.Residue == "NOT-TOUCHED" || s.Residue == "" {
			continue
		}
		add(s.Residue, s.Name)
	}
	counts := map[string]int{}
	for _, a := range p.Artifacts {
		switch a.Outcome {
		case certificate.Residual, certificate.NeedsHuman, certificate.OutOfScope:
			counts[a.Outcome]++
			add(a.Outcome, a.Store)
		}
	}
	if i, ok := idx["UNVERIFIED-physical-not-measured"]; ok {
		in := map[string]bool{}
		for _, st := range out[i].Stores {
			in[st] = true
		}
		n := map[string]int{}
		for _, a := range p.Artifacts {
			if a.Outcome != certificate.Verified || a.Level != certificate.LevelLogical || !in[a.Store] {
				continue
			}
			if c, ok := cause(a.Reason); ok {
				n[c]++
			}
		}
		for c, k := range n {
			out[i].Causes = append(out[i].Causes, Cause{Reason: c, Count: k})
		}
		sort.Slice(out[i].Causes, func(x, y int) bool {
			cx, cy := out[i].Causes[x], out[i].Causes[y]
			if cx.Count != cy.Count {
				return cx.Count > cy.Count
			}
			return cx.Reason < cy.Reason
		})
	}
	for i := range out {
		sort.Strings(out[i].Stores)
		where := "store"
		if len(out[i].Stores) > 1 {
			where = "stores"
		}
		out[i].Where = where + " " + strings.Join(out[i].Stores, ", ")
		switch n := counts[out[i].State]; {
		case n == 1:
			out[i].Where = "1 artifact in " + out[i].Where
		case n > 1:
			out[i].Where = fmt.Sprintf("%d artifacts in %s", n, out[i].Where)
		}
	}
	return out
}

// Write prints the notes of p, each as "STATE (where): meaning What to do:
// action", wrapped at width columns after indent. It prints nothing when
// every state is VERIFIED or NOT-TOUCHED.
func Write(w io.Writer, p certificate.Predicate, indent string, width int) {
	notes := Notes(p)
	if len(notes) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%sWhat the states short of VERIFIED mean:\n", indent)
	for _, n := range notes {
		text := n.State + " (" + n.Where + "): "
		if n.Text.State == "" {
			text += "amnesia has no explanation of this state; the store's evidence in the certificate says what it measured."
		} else {
			text += n.Text.Meaning
			for i, c := range n.Causes {
				if i == 0 {
					text += " Here:"
				} else {
					text += ";"
				}
				unit := "artifacts"
				if c.Count == 1 {
					unit = "artifact"
				}
				text += fmt.Sprintf(" %d %s: %s", c.Count, unit, c.Reason)
			}
			if len(n.Causes) > 0 {
				text += "."
			}
			text += " What to do: " + n.Text.Action
		}
		for i, line := range wrap(text, width-len(indent)-2) {
			if i == 0 {
				fmt.Fprintf(w, "%s- %s\n", indent, line)
			} else {
				fmt.Fprintf(w, "%s  %s\n", indent, line)
			}
		}
	}
}

func wrap(s string, width int) []string {
	if width < 20 {
		width = 20
	}
	var lines []string
	line := ""
	for _, word := range strings.Fields(s) {
		switch {
		case line == "":
			line = word
		case len(line)+1+len(word) > width:
			lines = append(lines, line)
			line = word
		default:
			line += " " + word
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}
