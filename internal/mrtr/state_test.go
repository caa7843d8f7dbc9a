package mrtr

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newTestSealer(t *testing.T) *Sealer {
	t.Helper()
	s, err := NewSealer(NewKey(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSealOpen(t *testing.T) {
	s := newTestSealer(t)
	st := &State{Method: "tools/call", Target: "t", Digest: Digest(json.RawMessage(`{"a":1}`)), Subject: "alice", Round: 2,
		Responses: map[string]json.RawMessage{"k": json.RawMessage(`{"action":"accept"}`)}, Handler: []byte("ok")}
	sealed, err := s.Seal(st)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Open(sealed)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Matches("tools/call", "t", st.Digest, "alice") || got.Round != 2 || string(got.Handler) != "ok" || string(got.Responses["k"]) != `{"action":"accept"}` {
		t.Errorf("opened %+v", got)
	}
	if got.Matches("tools/call", "t", st.Digest, "bob") || got.Matches("prompts/get", "t", st.Digest, "alice") {
		t.Error("matches another request")
	}
}

func TestOpenRejects(t *testing.T) {
	s := newTestSealer(t)
	sealed, err := s.Seal(&State{Method: "tools/call", Target: "t"})
	if err != nil {
		t.Fatal(err)
	}
	other := newTestSealer(t) // another key
	body, sig, _ := strings.Cut(sealed, ".")
	flipped := []byte(body)
	flipped[3] ^= 1
	// The MAC's last character carries 4 bits of the MAC and 2 unused bits.
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	unused := sealed[:len(sealed)-1] + string(alphabet[strings.IndexByte(alphabet, sealed[len(sealed)-1])^1])
	tests := []struct {
		name string
		give string
		open *Sealer
		want error
	}{
		{"tampered suffix", sealed + "-TAMPERED", s, ErrTampered},
		{"flipped payload", string(flipped) + "." + sig, s, ErrTampered},
		{"mac unused bits", unused, s, ErrTampered},
		{"no mac", body, s, ErrTampered},
		{"empty", "", s, ErrTampered},
		{"other key", sealed, other, ErrTampered},
		{"too large", strings.Repeat("a", MaxSize+1), s, ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := tt.open.Open(tt.give); !errors.Is(err, tt.want) {
				t.Errorf("Open = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestExpiry(t *testing.T) {
	s := newTestSealer(t)
	now := time.Now()
	s.now = func() time.Time { return now }
	sealed, err := s.Seal(&State{})
	if err != nil {
		t.Fatal(err)
	}
	s.now = func() time.Time { return now.Add(2 * time.Minute) }
	if _, err := s.Open(sealed); !errors.Is(err, ErrExpired) {
		t.Errorf("Open after expiry = %v, want ErrExpired", err)
	}
}

func TestSealTooLarge(t *testing.T) {
	s := newTestSealer(t)
	if _, err := s.Seal(&State{Handler: make([]byte, MaxSize)}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Seal = %v, want ErrTooLarge", err)
	}
}

func TestNewSealerShortKey(t *testing.T) {
	if _, err := NewSealer(make([]byte, KeySize-1), 0); err == nil {
		t.Error("a short key was accepted")
	}
}

func TestDigest(t *testing.T) {
	same := [][]string{
		{`{"a":1,"b":[true,"x"]}`, ` { "b" : [ true , "x" ] , "a" : 1 } `},
		{``, `null`, `{}`},
		{`{"n":12345678901234567890}`, `{"n": 12345678901234567890}`},
	}
	for _, group := range same {
		for _, g := range group[1:] {
			if Digest(json.RawMessage(group[0])) != Digest(json.RawMessage(g)) {
				t.Errorf("Digest(%s) != Digest(%s)", group[0], g)
			}
		}
	}
	if Digest(json.RawMessage(`{"a":1}`)) == Digest(json.RawMessage(`{"a":2}`)) {
		t.Error("different arguments share a digest")
	}
	if Digest(json.RawMessage(`{"n":12345678901234567890}`)) == Digest(json.RawMessage(`{"n":12345678901234567891}`)) {
		t.Error("large numbers rounded")
	}
}
