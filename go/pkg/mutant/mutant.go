// Package mutant names the deliberately broken build a scheduler binary is,
// for mutation testing: each plugin defines its mutants here, and one build
// is at most one of them.
//
// Nothing in the code sets the name: a mutant build sets it at link time, as
// schedgate's toolchain does for the binaries in its MUTANT_BUILDS:
//
//	go build -ldflags "-X schedgate/pkg/mutant.name=leaky-unreserve" ./cmd/kube-scheduler
//
// Check refuses any other non-empty value, so a misspelt name never passes for
// the correct build; Banner is what a mutant binary prints first, which the
// toolchain reads back from `kube-scheduler --version` (the linker ignores an
// -X naming a variable that does not exist).
package mutant

import (
	"fmt"
	"strings"
)

// name is the mutant this binary is, or "" for the correct build.
var name string

// Switch is one mutant: On says whether this binary is it.
type Switch struct{ plugin, name, breaks string }

var known []Switch

// Define registers a plugin's mutant with one line on what it breaks, and
// returns its switch. Call it from a package-level var (before main runs).
func Define(plugin, mutantName, breaks string) Switch {
	s := Switch{plugin, mutantName, breaks}
	known = append(known, s)
	return s
}

// On says whether this binary is the mutant s.
func (s Switch) On() bool { return name == s.name }

// Name is the mutant's name.
func (s Switch) Name() string { return s.name }

// Active is the mutant this binary is ("" for the correct build).
func Active() string { return name }

// Known lists every defined mutant of plugin ("" for all), in definition order.
func Known(plugin string) []Switch {
	var out []Switch
	for _, s := range known {
		if plugin == "" || s.plugin == plugin {
			out = append(out, s)
		}
	}
	return out
}

func lookup(n string) (Switch, bool) {
	for _, s := range known {
		if s.name == n {
			return s, true
		}
	}
	return Switch{}, false
}

// Check returns an error unless this binary is the correct build or a known mutant.
func Check() error {
	if _, ok := lookup(name); ok || name == "" {
		return nil
	}
	names := make([]string, len(known))
	for i, s := range known {
		names[i] = s.name
	}
	return fmt.Errorf("unknown mutant build %q (set with -ldflags -X); the known mutants are %s",
		name, strings.Join(names, ", "))
}

// Banner is the line a mutant binary prints on stderr when it starts, before
// anything else ("" for the correct build).
func Banner() string {
	if name == "" {
		return ""
	}
	s, ok := lookup(name)
	if !ok {
		return fmt.Sprintf("schedgate: %v; the plugins will refuse to start", Check())
	}
	return fmt.Sprintf("schedgate: THIS IS A DELIBERATELY BROKEN BUILD: %s mutant %s: %s", s.plugin, s.name, s.breaks)
}

// SetForTest makes the running test binary the mutant n; the returned
// function puts the previous name back.
func SetForTest(n string) (restore func()) {
	saved := name
	name = n
	return func() { name = saved }
}
