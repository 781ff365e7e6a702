// Command schedgate-pki writes the throwaway PKI of a local control plane:
//
//	schedgate-pki DIR [NAME=COMMON_NAME[/ORGANIZATION]]...
//
// It writes ca.{crt,key}, serving.{crt,key} (valid for 127.0.0.1, ::1 and
// localhost), the service-account key pair sa.{key,pub}, and one client
// certificate NAME.{crt,key} per identity argument. Every key is ECDSA P-256
// and lives one day: the files belong to one test run. When DIR already holds
// a CA, only the identity certificates are issued, signed by that CA.
package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "schedgate-pki:", err)
		os.Exit(1)
	}
}

type identity struct{ file, cn, org string }

func parseIdentity(arg string) (identity, error) {
	file, subject, ok := strings.Cut(arg, "=")
	if !ok || file == "" || subject == "" || strings.ContainsAny(file, "/.") {
		return identity{}, fmt.Errorf("identity %q: want NAME=COMMON_NAME[/ORGANIZATION]", arg)
	}
	cn, org, _ := strings.Cut(subject, "/")
	return identity{file: file, cn: cn, org: org}, nil
}

func run(args []string) error {
	if len(args) < 1 {
		return fmt.Errorf("usage: schedgate-pki DIR [NAME=CN[/O]]...")
	}
	dir := args[0]
	if strings.HasPrefix(dir, "-") {
		// No flags: "--version" or "-h" must not become a folder of keys.
		return fmt.Errorf("%s: not a folder name (usage: schedgate-pki DIR [NAME=CN[/O]]...)", dir)
	}
	ids := make([]identity, 0, len(args)-1)
	for _, a := range args[1:] {
		id, err := parseIdentity(a)
		if err != nil {
			return err
		}
		ids = append(ids, id)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	now := time.Now()
	if ca, caKey, err := loadCA(dir); err == nil {
		return issueIdentities(dir, ca, caKey, now, ids, now.UnixNano())
	} else if !os.IsNotExist(err) {
		return err
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "schedgate-ca"},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	if err := writePair(dir, "ca", caDER, caKey); err != nil {
		return err
	}
	if err := issue(dir, ca, caKey, now, "serving", 2, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "schedgate-serving"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    []string{"localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}); err != nil {
		return err
	}
	if err := issueIdentities(dir, ca, caKey, now, ids, 3); err != nil {
		return err
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	saPub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return err
	}
	if err := writePEM(filepath.Join(dir, "sa.pub"), "PUBLIC KEY", saPub); err != nil {
		return err
	}
	return writeKey(filepath.Join(dir, "sa.key"), saKey)
}

func issueIdentities(dir string, ca *x509.Certificate, caKey *ecdsa.PrivateKey, now time.Time, ids []identity, serial int64) error {
	for i, id := range ids {
		subject := pkix.Name{CommonName: id.cn}
		if id.org != "" {
			subject.Organization = []string{id.org}
		}
		if err := issue(dir, ca, caKey, now, id.file, serial+int64(i), &x509.Certificate{
			Subject:     subject,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}); err != nil {
			return err
		}
	}
	return nil
}

func issue(dir string, ca *x509.Certificate, caKey *ecdsa.PrivateKey, now time.Time, name string, serial int64, tmpl *x509.Certificate) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl.SerialNumber = big.NewInt(serial)
	tmpl.NotBefore, tmpl.NotAfter = now.Add(-time.Minute), now.Add(24*time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return writePair(dir, name, der, key)
}

func loadCA(dir string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	certPEM, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, "ca.key"))
	if err != nil {
		return nil, nil, err
	}
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, nil, fmt.Errorf("%s: ca.crt or ca.key is not PEM", dir)
	}
	ca, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, nil, err
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return nil, nil, err
	}
	return ca, key, nil
}

func writePair(dir, name string, certDER []byte, key *ecdsa.PrivateKey) error {
	if err := writePEM(filepath.Join(dir, name+".crt"), "CERTIFICATE", certDER); err != nil {
		return err
	}
	return writeKey(filepath.Join(dir, name+".key"), key)
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	return writePEM(path, "EC PRIVATE KEY", der)
}

func writePEM(path, kind string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600)
}
