package main

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRefusesFlagAsFolder(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, arg := range []string{"--version", "-h"} {
		if err := run([]string{arg}); err == nil {
			t.Fatalf("run(%q) succeeded, want an error", arg)
		}
		if _, err := os.Stat(arg); !os.IsNotExist(err) {
			t.Fatalf("run(%q) left %q behind (stat: %v)", arg, arg, err)
		}
	}
}

func TestWritesPKIAndIdentities(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	if err := run([]string{dir, "admin=kube-admin/system:masters"}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"ca.crt", "ca.key", "serving.crt", "serving.key", "sa.key", "sa.pub", "admin.crt", "admin.key"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	// A second call with the CA present issues only the new identity.
	before, _ := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err := run([]string{dir, "sched=sched-user"}); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if string(before) != string(after) {
		t.Error("the CA was replaced by a second call")
	}
	if _, err := os.Stat(filepath.Join(dir, "sched.crt")); err != nil {
		t.Error(err)
	}
}
