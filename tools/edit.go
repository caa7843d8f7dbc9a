package tools

import (
	"errors"
	"slices"
)

// With returns a new Set holding s's tools followed by defs, compiled as [Compile] compiles
// them, with s's middleware; a name already in s is a [*ToolNameError] with Reason "duplicate".
// s is not changed, which lets a server change its tools while calls of the old set are still
// running.
func (s *Set) With(defs ...Tool) (*Set, error) {
	var mw []Middleware
	if s != nil {
		mw = s.mw
	}
	add, err := Compile(defs, mw...)
	if err != nil {
		return nil, err
	}
	n := &Set{list: slices.Clone(s.List()), byName: make(map[string]*Compiled, s.Len()+add.Len()), mw: mw}
	for _, c := range n.list {
		n.byName[c.def.Name] = c
	}
	var errs []error
	for _, c := range add.list {
		if _, dup := n.byName[c.def.Name]; dup {
			errs = append(errs, &ToolNameError{Name: c.def.Name, Reason: "duplicate"})
			continue
		}
		n.byName[c.def.Name] = c
		n.list = append(n.list, c)
	}
	switch len(errs) {
	case 0:
		return n, nil
	case 1:
		return nil, errs[0]
	default:
		return nil, errors.Join(errs...)
	}
}

// Without returns a new Set without the tools named in names, and how many it removed. s is not
// changed.
func (s *Set) Without(names ...string) (*Set, int) {
	n := &Set{byName: make(map[string]*Compiled, s.Len())}
	if s != nil {
		n.mw = s.mw
	}
	removed := 0
	for _, c := range s.List() {
		if slices.Contains(names, c.def.Name) {
			removed++
			continue
		}
		n.list = append(n.list, c)
		n.byName[c.def.Name] = c
	}
	return n, removed
}
