package server

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// testPKI is a CA with a server certificate for 127.0.0.1 and a client
// certificate, written as PEM files.
type testPKI struct {
	dir                           string
	caFile, certFile, keyFile     string
	clientCertFile, clientKeyFile string
	pool                          *x509.CertPool
	clientCert                    tls.Certificate
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	p := &testPKI{dir: t.TempDir()}
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "memrl test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	p.pool = x509.NewCertPool()
	p.pool.AddCert(ca)
	p.caFile = p.write(t, "ca.pem", "CERTIFICATE", caDER)

	issue := func(name string, serial int64, usage x509.ExtKeyUsage) (certFile, keyFile string) {
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kb, _ := x509.MarshalECPrivateKey(key)
		return p.write(t, name+".pem", "CERTIFICATE", der), p.write(t, name+".key", "EC PRIVATE KEY", kb)
	}
	p.certFile, p.keyFile = issue("server", 2, x509.ExtKeyUsageServerAuth)
	p.clientCertFile, p.clientKeyFile = issue("client", 3, x509.ExtKeyUsageClientAuth)
	p.clientCert, err = tls.LoadX509KeyPair(p.clientCertFile, p.clientKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (p *testPKI) write(t *testing.T, name, typ string, der []byte) string {
	path := filepath.Join(p.dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// startTLSServer runs ListenAndServe with TLS on a loopback port.
func startTLSServer(t *testing.T, tlsCfg *tls.Config) string {
	t.Helper()
	s := mustNew(t, Config{Addr: "127.0.0.1:0", TLS: tlsCfg})
	done := make(chan error, 1)
	go func() { done <- s.ListenAndServe() }()
	for s.Addr() == nil {
		select {
		case err := <-done:
			t.Fatalf("ListenAndServe: %v", err)
		case <-time.After(time.Millisecond):
		}
	}
	t.Cleanup(func() {
		s.Shutdown(context.Background())
		<-done
	})
	return s.Addr().String()
}

func TestTLS(t *testing.T) {
	pki := newTestPKI(t)
	cfg, err := TLSConfig(pki.certFile, pki.keyFile, "")
	if err != nil {
		t.Fatal(err)
	}
	addr := startTLSServer(t, cfg)
	ctx := context.Background()

	c := redis.NewClient(&redis.Options{Addr: addr, TLSConfig: &tls.Config{RootCAs: pki.pool}, MaxRetries: -1})
	defer c.Close()
	if got, err := c.Echo(ctx, "over tls").Result(); err != nil || got != "over tls" {
		t.Fatalf("go-redis over TLS: %q, %v", got, err)
	}

	// A plain-text client gets no answer from a TLS server.
	plain := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, ReadTimeout: time.Second, DialTimeout: time.Second})
	defer plain.Close()
	if err := plain.Ping(ctx).Err(); err == nil {
		t.Fatal("a plain-text PING was answered by the TLS server")
	}

	cli := redisTool(t, "redis-cli")
	h, port := hostPort(t, addr)
	if got := runTool(t, cli, "--tls", "--cacert", pki.caFile, "-h", h, "-p", port, "PING"); got != "PONG\n" {
		t.Fatalf("redis-cli --tls PING: %q", got)
	}
}

func TestTLSClientCertificates(t *testing.T) {
	pki := newTestPKI(t)
	cfg, err := TLSConfig(pki.certFile, pki.keyFile, pki.caFile)
	if err != nil {
		t.Fatal(err)
	}
	addr := startTLSServer(t, cfg)
	ctx := context.Background()

	anon := redis.NewClient(&redis.Options{Addr: addr, TLSConfig: &tls.Config{RootCAs: pki.pool}, MaxRetries: -1})
	defer anon.Close()
	if err := anon.Ping(ctx).Err(); err == nil {
		t.Fatal("a client without a certificate was served")
	}
	withCert := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1,
		TLSConfig: &tls.Config{RootCAs: pki.pool, Certificates: []tls.Certificate{pki.clientCert}}})
	defer withCert.Close()
	if err := withCert.Ping(ctx).Err(); err != nil {
		t.Fatalf("a client with a certificate: %v", err)
	}

	cli := redisTool(t, "redis-cli")
	h, port := hostPort(t, addr)
	got := runTool(t, cli, "--tls", "--cacert", pki.caFile, "--cert", pki.clientCertFile, "--key", pki.clientKeyFile, "-h", h, "-p", port, "PING")
	if got != "PONG\n" {
		t.Fatalf("redis-cli --tls --cert PING: %q", got)
	}
	out, err := exec.Command(cli, "--tls", "--cacert", pki.caFile, "-h", h, "-p", port, "PING").CombinedOutput()
	var ee *exec.ExitError
	if strings.Contains(string(out), "PONG") || err != nil && !errors.As(err, &ee) {
		t.Fatalf("redis-cli without a client certificate: %q, %v", out, err)
	}
}

func TestTLSConfigErrors(t *testing.T) {
	pki := newTestPKI(t)
	if _, err := TLSConfig(pki.certFile, "", ""); err == nil {
		t.Error("a certificate without a key was accepted")
	}
	if _, err := TLSConfig(pki.certFile, pki.clientKeyFile, ""); err == nil {
		t.Error("a key that does not match the certificate was accepted")
	}
	if _, err := TLSConfig(pki.certFile, pki.keyFile, pki.keyFile); err == nil {
		t.Error("a CA file without certificates was accepted")
	}
}

// TestTLSRedisPy: redis-py (Debian's python3-redis, which scripts/test.sh
// installs) connects with ssl=True and a password, as a Python front end
// would.
func TestTLSRedisPy(t *testing.T) {
	py := "/usr/bin/python3" // Debian's Python, where python3-redis is installed
	if out, err := exec.Command(py, "-c", "import redis").CombinedOutput(); err != nil {
		t.Fatalf("redis-py is missing (scripts/test.sh installs python3-redis): %v\n%s", err, out)
	}
	pki := newTestPKI(t)
	cfg, err := TLSConfig(pki.certFile, pki.keyFile, "")
	if err != nil {
		t.Fatal(err)
	}
	s := mustNew(t, Config{Addr: "127.0.0.1:0", TLS: cfg, Users: []User{{Name: DefaultUser, Password: "s3cret"}}})
	done := make(chan error, 1)
	go func() { done <- s.ListenAndServe() }()
	for s.Addr() == nil {
		time.Sleep(time.Millisecond)
	}
	t.Cleanup(func() { s.Shutdown(context.Background()); <-done })
	h, port := hostPort(t, s.Addr().String())
	script := `
import sys, redis
r = redis.Redis(host=sys.argv[1], port=int(sys.argv[2]), password="s3cret", ssl=True, ssl_ca_certs=sys.argv[3])
print(r.ping(), r.echo(b"over tls").decode())
try:
    redis.Redis(host=sys.argv[1], port=int(sys.argv[2]), password="wrong", ssl=True, ssl_ca_certs=sys.argv[3]).ping()
except redis.exceptions.RedisError as e:
    print("refused" if "WRONGPASS" in str(e) else repr(e))
`
	out, err := exec.Command(py, "-c", script, h, port, pki.caFile).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "True over tls\nrefused" {
		t.Fatalf("redis-py over TLS: %v\n%s", err, out)
	}
}
