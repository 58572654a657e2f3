package replica

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// ClusterTLS is the mutual TLS of the raft transport: both ends present a
// certificate signed by the cluster's CA and verify the other's.
type ClusterTLS struct {
	// Server is the accepting end's configuration: it requires and
	// verifies the dialer's certificate.
	Server *tls.Config
	// Client is the dialing end's: it presents this node's certificate
	// and verifies the acceptor's.
	Client *tls.Config
}

// ClusterTLSConfig loads this node's certificate chain and key and the
// cluster's CA certificates (PEM files: --cluster-tls-cert, -key, -ca).
//
// A peer is accepted when its certificate chains to one of the CA
// certificates, whatever names it holds: raft addresses are host:port
// pairs that change with the nodes file, so host names are not checked.
// The CA must therefore be the cluster's own: every certificate it signs
// is a member of the cluster. Node certificates are used both ways, so
// they need both the serverAuth and clientAuth extended key usages (or
// none). TLS 1.3 only: both ends are memrl.
func ClusterTLSConfig(certFile, keyFile, caFile string) (*ClusterTLS, error) {
	if certFile == "" || keyFile == "" || caFile == "" {
		return nil, errors.New("replica: cluster TLS needs a certificate, a key and a CA file")
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("replica: cluster TLS certificate: %w", err)
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("replica: cluster TLS CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("replica: cluster TLS CA %s holds no PEM certificate", caFile)
	}
	server := &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: pool,
		ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS13}
	client := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13,
		// The chain is verified below, against the cluster CA only;
		// the name check that InsecureSkipVerify turns off does not
		// apply (see above).
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			return verifyPeerChain(cs, pool)
		}}
	return &ClusterTLS{Server: server, Client: client}, nil
}

// verifyPeerChain checks that the acceptor's certificate chains to pool,
// for server authentication.
func verifyPeerChain(cs tls.ConnectionState, pool *x509.CertPool) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("replica: the raft peer presented no certificate")
	}
	inter := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	if err != nil {
		return fmt.Errorf("replica: the raft peer's certificate: %w", err)
	}
	return nil
}
