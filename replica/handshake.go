package replica

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
)

// The raft handshake: before any raft byte flows on a connection, each end
// proves that it holds the cluster secret (Security.Secret), by a mutual
// challenge-response over fresh nonces from both ends. hashicorp/raft's
// NetworkTransport itself trusts every connection: without this anyone
// who reaches a raft port can send AppendEntries with a higher term
// (and have an entry of its own committed), RequestVote or TimeoutNow.
//
// Byte layout, version 1 (D is the dialing end, A the accepting end; |
// is concatenation; MAC(label, ...) is HMAC-SHA256 keyed by the secret):
//
//	D -> A  hello  "MRLR" | 0x01 | nonceD[32]                       37 bytes
//	A -> D  reply  "MRLR" | 0x01 | nonceA[32] | MAC("memrl raft v1 accept" | nonceD | nonceA)  69 bytes
//	D -> A  proof  MAC("memrl raft v1 dial" | nonceD | nonceA)      32 bytes
//
// then raft's own protocol. The nonces come from crypto/rand. D checks A's
// MAC before it sends its own (a D that meets a wrong secret sends nothing
// that proves anything); A checks D's proof before it hands the connection
// to raft. MACs are compared in constant time (hmac.Equal). The labels
// differ by direction, so a MAC A gives out can never serve as D's proof
// (no reflection), and nonceA is fresh on every connection, so a recorded
// proof never serves twice (no replay). An end that sees another magic or
// version, a wrong MAC, or no complete message within handshakeTimeout
// closes the connection.
//
// A later version changes the version byte; ends of different versions
// fail the handshake (a cluster is upgraded to a new handshake with every
// node stopped, or the new version accepts both).
//
// What the handshake does not do: it authenticates the connection when it
// opens, it does not encrypt or sign what follows. An attacker who can
// read or rewrite the traffic between nodes (on the path, not only able
// to reach a port) needs TLS as well (Security.TLS).
const (
	handshakeMagic   = "MRLR"
	handshakeVersion = 1
	nonceLen         = 32
	macLen           = sha256.Size
	helloLen         = len(handshakeMagic) + 1 + nonceLen
	replyLen         = helloLen + macLen

	labelAccept = "memrl raft v1 accept"
	labelDial   = "memrl raft v1 dial"
)

// MinSecretLen is the shortest cluster secret accepted: the reply's MAC
// lets anyone who reaches a raft port test guesses of the secret offline,
// so it must be too long to guess (openssl rand -hex 32 gives 64).
const MinSecretLen = 16

var (
	// ErrHandshake is the error of a connection whose peer did not
	// prove the cluster secret (or spoke no handshake, or another
	// version of it).
	ErrHandshake = errors.New("replica: raft handshake failed")
	// ErrSecretTooShort refuses a cluster secret shorter than
	// MinSecretLen bytes.
	ErrSecretTooShort = fmt.Errorf("replica: the cluster secret must be at least %d bytes", MinSecretLen)
)

// mac returns HMAC-SHA256(secret, label | nonceD | nonceA).
func mac(secret []byte, label string, nonceD, nonceA []byte) []byte {
	h := hmac.New(sha256.New, secret)
	h.Write([]byte(label))
	h.Write(nonceD)
	h.Write(nonceA)
	return h.Sum(nil)
}

// dialHandshake runs the dialing end's side of the handshake on c.
// REQUIRES: a deadline on c (the caller's), as the peer may never answer.
func dialHandshake(c io.ReadWriter, secret []byte) error {
	hello := make([]byte, helloLen)
	copy(hello, handshakeMagic)
	hello[len(handshakeMagic)] = handshakeVersion
	nonceD := hello[len(handshakeMagic)+1:]
	rand.Read(nonceD) // never fails (crypto/rand)
	if _, err := c.Write(hello); err != nil {
		return fmt.Errorf("%w: sending hello: %v", ErrHandshake, err)
	}
	reply := make([]byte, replyLen)
	if _, err := io.ReadFull(c, reply); err != nil {
		return fmt.Errorf("%w: reading the peer's reply (does it run with the same --cluster-secret?): %v", ErrHandshake, err)
	}
	if err := checkHeader(reply); err != nil {
		return err
	}
	nonceA, theirs := reply[len(handshakeMagic)+1:helloLen], reply[helloLen:]
	if !hmac.Equal(theirs, mac(secret, labelAccept, nonceD, nonceA)) {
		return fmt.Errorf("%w: the peer does not hold this node's cluster secret", ErrHandshake)
	}
	if _, err := c.Write(mac(secret, labelDial, nonceD, nonceA)); err != nil {
		return fmt.Errorf("%w: sending proof: %v", ErrHandshake, err)
	}
	return nil
}

// acceptHandshake runs the accepting end's side of the handshake on c.
// REQUIRES: a deadline on c (the caller's).
func acceptHandshake(c io.ReadWriter, secret []byte) error {
	hello := make([]byte, helloLen)
	// The header first: a peer speaking raft itself (or anything else)
	// is refused on its first bytes, not after a timeout.
	if _, err := io.ReadFull(c, hello[:len(handshakeMagic)+1]); err != nil {
		return fmt.Errorf("%w: reading hello: %v", ErrHandshake, err)
	}
	if err := checkHeader(hello); err != nil {
		return err
	}
	if _, err := io.ReadFull(c, hello[len(handshakeMagic)+1:]); err != nil {
		return fmt.Errorf("%w: reading hello: %v", ErrHandshake, err)
	}
	nonceD := hello[len(handshakeMagic)+1:]
	reply := make([]byte, replyLen)
	copy(reply, hello[:len(handshakeMagic)+1])
	nonceA := reply[len(handshakeMagic)+1 : helloLen]
	rand.Read(nonceA)
	copy(reply[helloLen:], mac(secret, labelAccept, nonceD, nonceA))
	if _, err := c.Write(reply); err != nil {
		return fmt.Errorf("%w: sending reply: %v", ErrHandshake, err)
	}
	proof := make([]byte, macLen)
	if _, err := io.ReadFull(c, proof); err != nil {
		return fmt.Errorf("%w: reading proof: %v", ErrHandshake, err)
	}
	if !hmac.Equal(proof, mac(secret, labelDial, nonceD, nonceA)) {
		return fmt.Errorf("%w: the peer does not hold this node's cluster secret", ErrHandshake)
	}
	return nil
}

// checkHeader checks a hello's or reply's magic and version.
func checkHeader(b []byte) error {
	if string(b[:len(handshakeMagic)]) != handshakeMagic {
		return fmt.Errorf("%w: the peer speaks no memrl raft handshake (does it run with --cluster-secret?)", ErrHandshake)
	}
	if v := b[len(handshakeMagic)]; v != handshakeVersion {
		return fmt.Errorf("%w: the peer speaks handshake version %d, this node %d", ErrHandshake, v, handshakeVersion)
	}
	return nil
}
