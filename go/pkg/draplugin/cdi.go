package draplugin

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/types"
)

const (
	// DefaultCDIDir is where containerd 2.x looks for CDI specs besides /etc/cdi.
	DefaultCDIDir = "/var/run/cdi"
	// EnvVar is the variable a prepared claim's CDI device sets in the container:
	// the claim's devices of this driver, comma-separated in allocation order.
	EnvVar = "SCHEDGATE_DEVICES"
	// cdiVersion is the oldest CDI spec version with everything used here (env edits).
	cdiVersion = "0.6.0"
	cdiClass   = "device"
)

// CDISpec is the subset of a CDI spec file this plugin writes.
type CDISpec struct {
	Version string      `json:"cdiVersion"`
	Kind    string      `json:"kind"`
	Devices []CDIDevice `json:"devices"`
}

// CDIDevice is one CDI device: what the runtime adds to a container that gets it.
type CDIDevice struct {
	Name           string         `json:"name"`
	ContainerEdits ContainerEdits `json:"containerEdits"`
}

// ContainerEdits are the edits of a CDI device (environment only, here).
type ContainerEdits struct {
	Env []string `json:"env"`
}

// CDIKind is the CDI kind of a driver's devices: "<driver>/device" (a driver
// name is a DNS subdomain, which is a legal CDI vendor).
func CDIKind(driver string) string { return driver + "/" + cdiClass }

// CDIDeviceID is the fully qualified CDI device of one claim: unique per claim,
// so a runtime's cached spec is never mistaken for a newer one.
func CDIDeviceID(driver string, claim types.UID) string {
	return CDIKind(driver) + "=" + string(claim)
}

// CDISpecPath is the spec file of one claim's devices of one driver.
func CDISpecPath(dir, driver string, claim types.UID) string {
	return filepath.Join(dir, fmt.Sprintf("schedgate-%s-%s.json", driver, claim))
}

// NewCDISpec is the spec for one claim: one device, named by the claim's UID,
// which sets EnvVar to the device names.
func NewCDISpec(driver string, claim types.UID, devices []string) CDISpec {
	return CDISpec{
		Version: cdiVersion,
		Kind:    CDIKind(driver),
		Devices: []CDIDevice{{
			Name:           string(claim),
			ContainerEdits: ContainerEdits{Env: []string{EnvVar + "=" + strings.Join(devices, ",")}},
		}},
	}
}

// WriteCDISpec writes the claim's spec file atomically (a runtime never reads half
// a spec) and returns the CDI device ID to hand to the kubelet.
func WriteCDISpec(dir, driver string, claim types.UID, devices []string) (string, error) {
	if claim == "" {
		return "", errors.New("claim without UID")
	}
	if len(devices) == 0 {
		return "", fmt.Errorf("claim %s: no devices to prepare", claim)
	}
	data, err := json.MarshalIndent(NewCDISpec(driver, claim, devices), "", "  ")
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := CDISpecPath(dir, driver, claim)
	tmp, err := os.CreateTemp(dir, ".schedgate-*.tmp")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", err
	}
	return CDIDeviceID(driver, claim), nil
}

// RemoveCDISpec removes the claim's spec file; a missing file is no error (unprepare is idempotent).
func RemoveCDISpec(dir, driver string, claim types.UID) error {
	if err := os.Remove(CDISpecPath(dir, driver, claim)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
