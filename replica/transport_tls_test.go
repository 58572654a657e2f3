package replica

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// TestRaftOverMutualTLS: a group whose transports use mutual TLS (and the
// secret inside it) elects and replicates; raft's own transport, and a
// TLS transport whose certificate another CA signed, get nothing.
func TestRaftOverMutualTLS(t *testing.T) {
	dir := t.TempDir()
	ca := writeTestPKI(t, dir, "cluster")
	good, err := ClusterTLSConfig(filepath.Join(dir, "cluster-node.crt"), filepath.Join(dir, "cluster-node.key"), ca)
	if err != nil {
		t.Fatal(err)
	}
	writeTestPKI(t, dir, "other")
	// The stranger trusts the cluster's CA but holds another's certificate.
	stranger, err := ClusterTLSConfig(filepath.Join(dir, "other-node.crt"), filepath.Join(dir, "other-node.key"), ca)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ClusterTLSConfig(filepath.Join(dir, "cluster-node.crt"), filepath.Join(dir, "cluster-node.key"), filepath.Join(dir, "missing.pem")); err == nil {
		t.Fatal("a missing CA file was accepted")
	}
	// A node dialing an impostor (a certificate of another CA) refuses
	// it: the dialer checks the acceptor's chain too.
	impostor, err := ListenSecure("127.0.0.1:0", Security{TLS: stranger}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := (&secureStream{sec: Security{TLS: good}}).Dial(impostor.LocalAddr(), 5*time.Second); err == nil {
		c.Close()
		t.Fatal("dialed an acceptor whose certificate another CA signed")
	} else if !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("dial to an impostor: %v", err)
	}
	impostor.Close()
	for _, sec := range []Security{{TLS: good}, {TLS: good, Secret: testSecret}} {
		nodes := startQuietGroup(t, 3, func() (*raft.NetworkTransport, error) { return ListenSecure("127.0.0.1:0", sec, nil) })
		leader := waitLeader(t, nodes)
		rdb := leader.client(t)
		if err := rdb.Do(context.Background(), "MEM.CREATE", "c", "DIM", 2).Err(); err != nil {
			t.Fatal(err)
		}
		sameState(t, leader, nodes)
		var target *testNode
		for _, tn := range nodes {
			if tn != leader {
				target = tn
				break
			}
		}
		before := settled(t, target, leader)
		raw, err := raft.NewTCPTransport("127.0.0.1:0", nil, 1, 3*time.Second, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		strange, err := ListenSecure("127.0.0.1:0", Security{TLS: stranger, Secret: sec.Secret}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for name, tr := range map[string]*raft.NetworkTransport{"plain": raw, "other CA": strange} {
			for rpc, err := range attack(target, tr, before) {
				if err == nil {
					t.Errorf("secret %v, %s: %s succeeded", sec.Secret != nil, name, rpc)
				}
			}
		}
		raw.Close()
		strange.Close()
		if mid := observe(target); mid.term != before.term || mid.lastIndex != before.lastIndex || mid.leader != before.leader {
			t.Fatalf("follower %s before the attacks %+v, after them %+v", target.id, before, mid)
		}
		for _, tn := range nodes {
			tn.stop(t)
		}
	}
}

// writeTestPKI writes a CA (name-ca.pem) and a node certificate signed by
// it (name-node.crt, name-node.key) for both server and client use, and
// returns the CA file's path.
func writeTestPKI(t testing.TB, dir, name string) string {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name + " CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: name + " node"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	write := func(file, typ string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, file), pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(name+"-ca.pem", "CERTIFICATE", caDER)
	write(name+"-node.crt", "CERTIFICATE", der)
	write(name+"-node.key", "PRIVATE KEY", keyDER)
	return filepath.Join(dir, name+"-ca.pem")
}
