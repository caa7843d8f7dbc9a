// Package taskstore keeps the tasks of the io.modelcontextprotocol/tasks extension (MCP
// 2026-07-28): one [Record] per task, from its creation until its TTL passes.
//
// The engine writes a task's record when it is created (before the client learns its id), at
// every change of status, and when it ends; it reads records to answer tasks/get, and deletes
// them when their TTL has passed. Two stores come with the package: [NewMemory], the default,
// which keeps records in the process's memory, and [OpenBolt], which keeps them in a bbolt file
// so that they survive a restart. Any other [Store] works too (a shared database, for servers
// that must see each other's tasks).
//
// A task id names its task unguessably and, optionally, the node it lives on: see [NewID].
package taskstore

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrNotFound is returned by [Store.Get] for an id the store does not hold.
var ErrNotFound = errors.New("taskstore: task not found")

// Status is where a task stands.
type Status string

// The statuses of a task. Completed, Failed and Cancelled are terminal: a task there never
// changes again.
const (
	Working       Status = "working"
	InputRequired Status = "input_required"
	Completed     Status = "completed"
	Failed        Status = "failed"
	Cancelled     Status = "cancelled"
)

// Terminal reports whether s is a final status.
func (s Status) Terminal() bool { return s == Completed || s == Failed || s == Cancelled }

// Valid reports whether s is one of the five statuses.
func (s Status) Valid() bool { return s == Working || s == InputRequired || s.Terminal() }

// Record is the state of one task. The engine never modifies a record after handing it to
// [Store.Put], so a store may keep it as it is; a record returned by [Store.Get] must not be
// modified either.
type Record struct {
	// ID is the task id ([NewID]).
	ID string
	// Owner is an opaque key of the caller that created the task: the engine's digest of its
	// authenticated subject, or "" without authentication. Only the same caller may read,
	// update or cancel the task.
	Owner string
	// Tool is the name of the tool the task runs.
	Tool string
	// Status is where the task stands; StatusMessage optionally says more, for people.
	Status        Status
	StatusMessage string
	// CreatedAt and UpdatedAt are when the task was created and when it last changed.
	CreatedAt time.Time
	UpdatedAt time.Time
	// TTL is how long the task is kept from its creation; then it is forgotten (and stopped, if
	// it still runs). PollInterval is how often a client should poll it.
	TTL          time.Duration
	PollInterval time.Duration
	// InputRequests is the JSON object of the requests for input the task waits for, by key,
	// while its status is InputRequired.
	InputRequests json.RawMessage
	// Result is the JSON object of the tool's result (a CallToolResult) once Completed.
	Result json.RawMessage
	// Error is the JSON-RPC error object of a Failed task.
	Error json.RawMessage
}

// ExpiresAt is when the task's TTL passes.
func (r *Record) ExpiresAt() time.Time { return r.CreatedAt.Add(r.TTL) }

// Store keeps task records. Implementations must be safe for concurrent use. Every method may
// block (on a disk, a network): the engine calls them only from goroutines of its own, never
// from inside an actor.
type Store interface {
	// Put stores rec, replacing the record with its id, if any. When Put returns nil the
	// record is as durable as the store promises, and a later Get (from any goroutine, or any
	// process that shares the store) returns it: the engine answers a tools/call with the new
	// task's id only after the task's first Put returned.
	Put(ctx context.Context, rec *Record) error
	// Get returns the record of id, or [ErrNotFound].
	Get(ctx context.Context, id string) (*Record, error)
	// Delete removes the records of ids; ids it does not hold are ignored.
	Delete(ctx context.Context, ids ...string) error
	// Scan calls fn for every record, in no particular order, until fn returns an error, which
	// Scan then returns. The engine scans once, when it starts, to take over the tasks of an
	// earlier process: those still running there are now failed, those expired are deleted.
	// fn must not call the store.
	Scan(ctx context.Context, fn func(*Record) error) error
}

// idEncoding spells the random part of a task id: lower-case base32, no padding.
var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// idSecretLen is the length of the random part of an id: 128 bits in 26 characters.
const idSecretLen = 26

// NewID returns a new task id: 128 random bits from crypto/rand, unguessable, so that an id
// alone cannot be found by anyone it was not given to. With a home (the name of the node that
// runs the task, for routing in a cluster), the id is "<home>.<random>"; without, just the
// random part. A home is 1 to 32 characters from a-z, 0-9 and '-'.
func NewID(home string) (string, error) {
	if err := CheckHome(home); err != nil {
		return "", err
	}
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	secret := idEncoding.EncodeToString(b[:])
	if home == "" {
		return secret, nil
	}
	return home + "." + secret, nil
}

// HomeOf returns the home an id names, or "" for an id without one (or that is malformed).
func HomeOf(id string) string {
	home, secret, ok := strings.Cut(id, ".")
	if !ok || len(secret) != idSecretLen || CheckHome(home) != nil {
		return ""
	}
	return home
}

// CheckHome returns an error saying what is wrong with home, or nil when it may name a node
// in task ids ("" included: no home).
func CheckHome(home string) error {
	if len(home) > 32 {
		return fmt.Errorf("taskstore: home %q is longer than 32 characters", home)
	}
	for _, c := range home {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return fmt.Errorf("taskstore: home %q may contain only a-z, 0-9 and '-'", home)
		}
	}
	return nil
}
