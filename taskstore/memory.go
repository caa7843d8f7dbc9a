package taskstore

import (
	"context"
	"sync"
)

// Memory is a [Store] in the process's memory: records live until they are deleted (when their
// TTL passes) or the process ends. It is the engine's default. Its methods never block for
// long: one map under a mutex.
type Memory struct {
	mu   sync.RWMutex
	recs map[string]*Record
}

var _ Store = (*Memory)(nil)

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory { return &Memory{recs: make(map[string]*Record)} }

// Put stores rec as it is (the engine never modifies a record it has stored).
func (m *Memory) Put(_ context.Context, rec *Record) error {
	m.mu.Lock()
	m.recs[rec.ID] = rec
	m.mu.Unlock()
	return nil
}

// Get returns the stored record of id, which must not be modified, or [ErrNotFound].
func (m *Memory) Get(_ context.Context, id string) (*Record, error) {
	m.mu.RLock()
	rec, ok := m.recs[id]
	m.mu.RUnlock()
	if !ok {
		return nil, ErrNotFound
	}
	return rec, nil
}

// Delete removes the records of ids.
func (m *Memory) Delete(_ context.Context, ids ...string) error {
	m.mu.Lock()
	for _, id := range ids {
		delete(m.recs, id)
	}
	m.mu.Unlock()
	return nil
}

// Scan calls fn for every record, on a snapshot taken first, so that fn runs without the lock.
func (m *Memory) Scan(ctx context.Context, fn func(*Record) error) error {
	m.mu.RLock()
	all := make([]*Record, 0, len(m.recs))
	for _, r := range m.recs {
		all = append(all, r)
	}
	m.mu.RUnlock()
	for _, r := range all {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

// Len returns the number of records held.
func (m *Memory) Len() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.recs)
}
