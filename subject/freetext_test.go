package subject

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestCheckFreeText(t *testing.T) {
	for _, tc := range []struct {
		text string
		kind string // "" = accepted
	}{
		// Accepted: ticket references, dates, times, small numbers.
		{"DSR-1", ""},
		{"JIRA-1234", ""},
		{"ticket 2026-12-01", ""},
		{"request of 01.12.2026, answered 2026-12-01T10:30:00Z", ""},
		{"DSR-2026-000123", ""},
		{"JIRA-12345678", ""},
		{"INC0012345", ""},
		{"GDPR Art. 17 request, 3 of 12", ""},
		{"call at 10:30 on 12/01/2026", ""},
		{"order 123456", ""},
		{"", ""},
		// Refused.
		{"alice@example.org", KindEmail},
		{"erase per mail from Bob.Smith+dsr@mail.example.co.uk please", KindEmail},
		{"ｂｏｂ＠ｅｘａｍｐｌｅ．ｏｒｇ", KindEmail}, // full width folds under NFKC
		{"+44 20 7946 0000", KindPhone},
		{"phone (020) 7946-0000", KindPhone},
		{"ticket 1234567", KindPhone},
		{"call 555.123.4567 back", KindPhone},
		{"+447700900100", KindPhone},
		{"GB82 WEST 1234 5698 7654 32", KindIBAN},
		{"refund to gb82west12345698765432 asap", KindIBAN},
		{"DE89 3704 0044 0532 0130 00 is the account", KindIBAN},
		{"4539 1488 0343 6467", KindCard},
		{"card 4111-1111-1111-1111", KindCard},
		{"from 203.0.113.7", KindIP},
	} {
		err := CheckFreeText("--reason", tc.text)
		var pe *PersonalDataError
		switch {
		case tc.kind == "" && err != nil:
			t.Errorf("%q refused: %v", tc.text, err)
		case tc.kind != "" && !errors.As(err, &pe):
			t.Errorf("%q accepted, want %s", tc.text, tc.kind)
		case tc.kind != "" && (pe.Kind != tc.kind || pe.Field != "--reason" || !errors.Is(err, ErrPersonalData)):
			t.Errorf("%q: %+v, want kind %s", tc.text, pe, tc.kind)
		case tc.kind != "" && tc.text != "" && strings.Contains(err.Error(), tc.text):
			t.Errorf("the error echoes the text: %v", err)
		}
	}
	// Numbers that fail their check digits are not IBANs or cards.
	var pe *PersonalDataError
	if err := CheckFreeText("r", "GB83 WEST 1234 5698 7654 32"); errors.As(err, &pe) && pe.Kind == KindIBAN {
		t.Errorf("a number failing mod-97 is called an IBAN")
	}
	if err := CheckFreeText("r", "4539 1488 0343 6468"); errors.As(err, &pe) && pe.Kind == KindCard {
		t.Errorf("a number failing Luhn is called a card")
	}
}

func TestCheckNotSubject(t *testing.T) {
	k, _ := NewKeyer(bytes.Repeat([]byte{7}, PepperSize))
	for _, tc := range []struct {
		raw, text string
		refused   bool
	}{
		{"alice@example.org", "erase ALICE@Example.org now", true},
		{"alice@example.org", "<alice@example.org>", true},
		{"Zoë Ångström", "request from zoë  ångström, DSR-9", true},
		{"+44 20 7946 0000", "DSR-9 for +44 20 7946 0000", true},
		{"QQ 12 34 56 C", "nino QQ 12 34 56 C.", true},
		{"1 84 12 76 451 103 46", "insee: 1 84 12 76 451 103 46", true},
		{"user-4711", "DSR for user-4711", true},
		{"@quietfox_27", "DSR-1 (@quietfox_27)", true},
		{"(c)Corp-1", "x ((c)Corp-1!!", true},
		{"alice@example.org", "DSR-1", false},
		{"alice@example.org", "alice", false},
		{"Jürgen Müller-Lüdenscheidt", "Jürgen Müller", false},
	} {
		subj, err := k.Key("tenant", tc.raw)
		if err != nil {
			t.Fatal(err)
		}
		kerr := k.CheckNotSubject("--reason", tc.text, "tenant", subj)
		rerr := CheckNotSubject("--reason", tc.text, tc.raw)
		for name, err := range map[string]error{"keyed": kerr, "raw": rerr} {
			if got := errors.Is(err, ErrPersonalData); got != tc.refused {
				t.Errorf("%s check of %q against %q: refused %v, want %v (%v)", name, tc.text, tc.raw, got, tc.refused, err)
			}
			if err != nil && (strings.Contains(err.Error(), tc.text) || strings.Contains(err.Error(), tc.raw)) {
				t.Errorf("the error echoes the text: %v", err)
			}
		}
		// Another scope is another subject.
		if err := k.CheckNotSubject("--reason", tc.text, "other", subj); err != nil {
			t.Errorf("%q matched the subject of another scope", tc.text)
		}
	}
	// The keyed check finds whole tokens only; the raw check also finds the
	// id inside a longer word.
	subj, _ := k.Key("tenant", "user-4711")
	if err := k.CheckNotSubject("--reason", "DSR for user-47110", "tenant", subj); err != nil {
		t.Errorf("keyed: a longer token matched: %v", err)
	}
	if err := CheckNotSubject("--reason", "DSR for user-47110", "user-4711"); !errors.Is(err, ErrPersonalData) {
		t.Errorf("raw: the id inside a longer token was not found")
	}
	// The raw check also finds a phone id's digits written another way.
	if err := CheckNotSubject("--reason", "DSR for 442079460000", "+44 20 7946 0000"); !errors.Is(err, ErrPersonalData) {
		t.Errorf("the digits of a phone id were not found")
	}
}
