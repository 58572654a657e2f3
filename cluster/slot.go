package cluster

// NumSlots is the number of hash slots, as in Redis Cluster.
const NumSlots = 16384

// crcTable is CRC16-XMODEM (polynomial 0x1021, initial value 0, no
// reflection), the checksum Redis Cluster hashes keys with.
var crcTable = func() (t [256]uint16) {
	for i := range t {
		crc := uint16(i) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
		t[i] = crc
	}
	return t
}()

// crc16 returns the CRC16-XMODEM of b.
func crc16(b []byte) uint16 {
	var crc uint16
	for _, c := range b {
		crc = crc<<8 ^ crcTable[byte(crc>>8)^c]
	}
	return crc
}

// HashTag returns the part of key that is hashed: the bytes between the
// first '{' and the first '}' after it when there is at least one byte
// between them, else the whole key (Redis's rule, so that clients compute
// the same slot).
func HashTag(key []byte) []byte {
	for i, c := range key {
		if c != '{' {
			continue
		}
		for j := i + 1; j < len(key); j++ {
			if key[j] == '}' {
				if j == i+1 {
					return key // "{}" : the whole key
				}
				return key[i+1 : j]
			}
		}
		return key // no '}' after the first '{'
	}
	return key
}

// HashSlot returns key's slot, in [0, NumSlots).
func HashSlot(key []byte) int {
	return int(crc16(HashTag(key)) & (NumSlots - 1))
}
