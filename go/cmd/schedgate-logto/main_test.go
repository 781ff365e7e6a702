package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The test binary is the command itself when asked to be (its arguments are then the command's).
func TestMain(m *testing.M) {
	if os.Getenv("SCHEDGATE_LOGTO_AS_MAIN") == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

func logto(t *testing.T, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "SCHEDGATE_LOGTO_AS_MAIN=1")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("running schedgate-logto: %v", err)
	}
	return string(out), cmd.ProcessState.ExitCode()
}

func TestTheProgramsOutputAndErrorAreAppendedToTheFileAndItsExitStatusIsItsOwn(t *testing.T) {
	file := filepath.Join(t.TempDir(), "scheduler.log")
	if err := os.WriteFile(file, []byte("an earlier launch\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code := logto(t, file, "sh", "-c", "echo to-stdout; echo to-stderr >&2; exit 3")
	if out != "" || code != 3 {
		t.Fatalf("own output %q, exit %d; want nothing and 3 (the program's)", out, code)
	}
	got, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if want := "an earlier launch\nto-stdout\nto-stderr\n"; string(got) != want {
		t.Fatalf("file holds %q, want %q", got, want)
	}
}

func TestAFileThatCannotBeOpenedOrAProgramThatIsNotThereIsSaidWhereTheCallerSeesIt(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such-folder", "scheduler.log")
	out, code := logto(t, missing, "sh", "-c", "true")
	if code != 1 || !strings.Contains(out, missing) {
		t.Fatalf("exit %d, said %q; want 1 naming %s", code, out, missing)
	}
	out, code = logto(t, filepath.Join(t.TempDir(), "x.log"), "/no/such/program")
	if code != 127 || !strings.Contains(out, "/no/such/program") {
		t.Fatalf("exit %d, said %q; want 127 naming the program", code, out)
	}
	if out, code = logto(t, "only-a-file"); code != 2 || !strings.Contains(out, "usage") {
		t.Fatalf("exit %d, said %q; want 2 and the usage", code, out)
	}
}
