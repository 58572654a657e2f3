package replica

import (
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkRaftDial: the cost of a new authenticated raft connection on
// loopback (dial, TLS and/or the secret's handshake, both ends), which
// raft pays once per pooled connection, not per RPC.
// go test -run '^$' -bench BenchmarkRaftDial ./replica
func BenchmarkRaftDial(b *testing.B) {
	dir := b.TempDir()
	ca := writeTestPKI(b, dir, "bench")
	tlsCfg, err := ClusterTLSConfig(filepath.Join(dir, "bench-node.crt"), filepath.Join(dir, "bench-node.key"), ca)
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		sec  Security
	}{
		{"plain", Security{}},
		{"secret", Security{Secret: testSecret}},
		{"tls", Security{TLS: tlsCfg}},
		{"tls+secret", Security{TLS: tlsCfg, Secret: testSecret}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			tr, err := ListenSecure("127.0.0.1:0", tc.sec, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer tr.Close()
			// Raft's consumer would read the RPCs; nothing is sent here.
			s := &secureStream{sec: tc.sec}
			addr := tr.LocalAddr()
			b.ResetTimer()
			for b.Loop() {
				c, err := s.Dial(addr, 5*time.Second)
				if err != nil {
					b.Fatal(err)
				}
				c.Close()
			}
		})
	}
}
