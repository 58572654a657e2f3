package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/memrl/memrl/cluster"
)

// TestClusterStartOverTLS: with client ports that speak only TLS and
// require client certificates (--tls-cert, --tls-key, --tls-ca), memrl
// cluster start's probes and the nodes' own calls to each other (ROLE
// polls, MEM.LIST CLUSTER) go over TLS with the node's certificate, so
// the cluster starts and routes.
func TestClusterStartOverTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 2 processes")
	}
	bin := clusterBin(t)
	dir := t.TempDir()
	ca, cert := writeNodePKI(t, dir)
	port := freePortRange(t, 2)
	tlsArgs := []string{"--tls-cert", filepath.Join(dir, "node.crt"), "--tls-key", filepath.Join(dir, "node.key"), "--tls-ca", filepath.Join(dir, "ca.pem")}
	start := exec.Command(bin, append([]string{"cluster", "start", "--dir", dir, "--shards", "2", "--port", strconv.Itoa(port),
		"--wait", "60s", "--", "--sync", "none", "--requirepass", "pw"}, tlsArgs...)...)
	out, err := start.CombinedOutput()
	t.Cleanup(func() { exec.Command(bin, "cluster", "stop", "--dir", dir).Run() })
	if err != nil || !strings.Contains(string(out), "every shard accepts writes") {
		t.Fatalf("memrl cluster start over TLS: %v\n%s", err, out)
	}
	nodes, err := cluster.ReadNodes(filepath.Join(dir, cluster.NodesFile))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	slots := cluster.DefaultSlots(2)
	names := []string{collectionIn(slots, 0, 0), collectionIn(slots, 1, 0)}
	tcfg := &tls.Config{RootCAs: ca, Certificates: []tls.Certificate{cert}, ServerName: "127.0.0.1"}
	for s, n := range names {
		rc := redis.NewClient(&redis.Options{Addr: nodes[s].Addr, Password: "pw", TLSConfig: tcfg})
		err := rc.Do(ctx, "MEM.CREATE", n, "DIM", 2).Err()
		rc.Close()
		if err != nil {
			t.Fatalf("MEM.CREATE %s on %s: %v", n, nodes[s].ID, err)
		}
	}
	want := slices.Clone(names)
	slices.Sort(want)
	for _, node := range nodes {
		rc := redis.NewClient(&redis.Options{Addr: node.Addr, Password: "pw", TLSConfig: tcfg, MaxRetries: -1})
		got, err := rc.Do(ctx, "MEM.LIST", "CLUSTER").StringSlice()
		if err != nil || !slices.Equal(got, want) {
			rc.Close()
			t.Fatalf("MEM.LIST CLUSTER on %s = %v, %v; want %v", node.ID, got, err, want)
		}
		other := names[1-node.Shard]
		if err := rc.Do(ctx, "MEM.INFO", other).Err(); err == nil || !strings.HasPrefix(err.Error(), "MOVED ") {
			rc.Close()
			t.Fatalf("MEM.INFO %s on %s: %v", other, node.ID, err)
		}
		rc.Close()
	}
}

// writeNodePKI writes a CA (ca.pem) and a certificate for 127.0.0.1
// signed by it (node.crt, node.key) for server and client use, and
// returns the CA pool and the certificate.
func writeNodePKI(t *testing.T, dir string) (*x509.CertPool, tls.Certificate) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "node"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalPKCS8PrivateKey(key)
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	for file, b := range map[string][]byte{"ca.pem": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), "node.crt": certPEM, "node.key": keyPEM} {
		if err := os.WriteFile(filepath.Join(dir, file), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	return pool, pair
}
