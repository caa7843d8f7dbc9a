package taskstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// Bolt is a durable [Store] in one bbolt file: every Put is on disk (fsynced) when it returns,
// so a server that restarts, even after a crash, finds its tasks again. Concurrent writes are
// coalesced into one transaction (bbolt's Batch), which keeps thousands of task updates a
// second cheap. The file belongs to one process at a time: a second [OpenBolt] of it waits for
// the first to close it, up to [BoltOptions].LockTimeout.
type Bolt struct {
	db *bolt.DB
}

var _ Store = (*Bolt)(nil)

// bucket holds the records, by id.
var bucket = []byte("tasks")

// DefaultLockTimeout is how long [OpenBolt] waits for another process to release the file.
const DefaultLockTimeout = 10 * time.Second

// BoltOptions configure [OpenBolt]. The zero value is usable.
type BoltOptions struct {
	// LockTimeout is how long to wait for a file another process holds open. 0 means
	// [DefaultLockTimeout].
	LockTimeout time.Duration
	// NoSync skips the fsync of each write: faster, but a crash of the machine (not only of the
	// process) can lose the last writes. For tests and benchmarks.
	NoSync bool
}

// OpenBolt opens (creating it if need be) the bbolt file at path as a task store. Close it
// when the server that uses it has shut down.
func OpenBolt(path string, opts BoltOptions) (*Bolt, error) {
	timeout := opts.LockTimeout
	if timeout <= 0 {
		timeout = DefaultLockTimeout
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: timeout, NoSync: opts.NoSync})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("taskstore: %s is held by another process (waited %s)", path, timeout)
	}
	if err != nil {
		return nil, fmt.Errorf("taskstore: open %s: %w", path, err)
	}
	db.MaxBatchDelay = 2 * time.Millisecond
	if err := db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bucket)
		return err
	}); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("taskstore: open %s: %w", path, err)
	}
	return &Bolt{db: db}, nil
}

// Close closes the file. Calls after Close fail.
func (b *Bolt) Close() error { return b.db.Close() }

// Put writes rec, durably, in a batch with the writes made at the same time.
func (b *Bolt) Put(ctx context.Context, rec *Record) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	data, err := encodeRecord(rec)
	if err != nil {
		return err
	}
	return b.db.Batch(func(tx *bolt.Tx) error {
		return tx.Bucket(bucket).Put([]byte(rec.ID), data)
	})
}

// Get reads the record of id.
func (b *Bolt) Get(ctx context.Context, id string) (*Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var rec *Record
	err := b.db.View(func(tx *bolt.Tx) error {
		data := tx.Bucket(bucket).Get([]byte(id))
		if data == nil {
			return ErrNotFound
		}
		var err error
		rec, err = decodeRecord(id, data) // decodes a copy: data is valid only in the transaction
		return err
	})
	return rec, err
}

// Delete removes the records of ids in one batch.
func (b *Bolt) Delete(ctx context.Context, ids ...string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(ids) == 0 {
		return nil
	}
	return b.db.Batch(func(tx *bolt.Tx) error {
		bk := tx.Bucket(bucket)
		for _, id := range ids {
			if err := bk.Delete([]byte(id)); err != nil {
				return err
			}
		}
		return nil
	})
}

// Scan reads every record in one read transaction. A record that cannot be decoded is an
// error naming its id.
func (b *Bolt) Scan(ctx context.Context, fn func(*Record) error) error {
	return b.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucket).ForEach(func(k, v []byte) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			rec, err := decodeRecord(string(k), v)
			if err != nil {
				return err
			}
			return fn(rec)
		})
	})
}

// boltRecord is a record's form on disk: short keys, times in Unix nanoseconds, durations in
// milliseconds. v is the format's version.
type boltRecord struct {
	V             int             `json:"v"`
	Owner         string          `json:"o,omitempty"`
	Tool          string          `json:"t"`
	Status        Status          `json:"s"`
	StatusMessage string          `json:"sm,omitempty"`
	CreatedAt     int64           `json:"c"`
	UpdatedAt     int64           `json:"u"`
	TTLMs         int64           `json:"ttl"`
	PollMs        int64           `json:"poll,omitempty"`
	InputRequests json.RawMessage `json:"in,omitempty"`
	Result        json.RawMessage `json:"res,omitempty"`
	Error         json.RawMessage `json:"err,omitempty"`
}

const boltFormat = 1

func encodeRecord(r *Record) ([]byte, error) {
	data, err := json.Marshal(&boltRecord{
		V: boltFormat, Owner: r.Owner, Tool: r.Tool, Status: r.Status, StatusMessage: r.StatusMessage,
		CreatedAt: r.CreatedAt.UnixNano(), UpdatedAt: r.UpdatedAt.UnixNano(),
		TTLMs: r.TTL.Milliseconds(), PollMs: r.PollInterval.Milliseconds(),
		InputRequests: r.InputRequests, Result: r.Result, Error: r.Error,
	})
	if err != nil {
		return nil, fmt.Errorf("taskstore: encode task %s: %w", r.ID, err)
	}
	return data, nil
}

func decodeRecord(id string, data []byte) (*Record, error) {
	var br boltRecord
	if err := json.Unmarshal(data, &br); err != nil {
		return nil, fmt.Errorf("taskstore: task %s: malformed record: %w", id, err)
	}
	if br.V != boltFormat || !br.Status.Valid() {
		return nil, fmt.Errorf("taskstore: task %s: record of unknown format %d or status %q", id, br.V, br.Status)
	}
	return &Record{
		ID: id, Owner: br.Owner, Tool: br.Tool, Status: br.Status, StatusMessage: br.StatusMessage,
		CreatedAt: time.Unix(0, br.CreatedAt), UpdatedAt: time.Unix(0, br.UpdatedAt),
		TTL: time.Duration(br.TTLMs) * time.Millisecond, PollInterval: time.Duration(br.PollMs) * time.Millisecond,
		InputRequests: br.InputRequests, Result: br.Result, Error: br.Error,
	}, nil
}
