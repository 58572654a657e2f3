package cluster

import "testing"

// Redis's own values: crc16 from the cluster specification's reference
// implementation, slots from the CLUSTER KEYSLOT documentation.
func TestCRC16KnownValue(t *testing.T) {
	if got := crc16([]byte("123456789")); got != 0x31C3 {
		t.Fatalf("crc16(123456789) = %#x, want 0x31C3", got)
	}
}

func TestHashSlotRedisValues(t *testing.T) {
	for _, tc := range []struct {
		key  string
		slot int
	}{
		{"123456789", 0x31C3},
		{"somekey", 11058},
		{"foo", 12182},
		{"foo{hash_tag}", 2515},
		{"{hash_tag}", 2515},
		{"", 0},
	} {
		if got := HashSlot([]byte(tc.key)); got != tc.slot {
			t.Errorf("HashSlot(%q) = %d, want %d", tc.key, got, tc.slot)
		}
	}
}

func TestHashTagRules(t *testing.T) {
	same := [][2]string{
		{"{user1000}.following", "{user1000}.followers"},
		{"foo{bar}{zap}", "bar"},  // only the first tag counts
		{"foo{{bar}}zap", "{bar"}, // the tag is "{bar"
		{"{}x", "{}x"},            // empty tag: the whole key
		{"a{b", "a{b"},            // no closing brace: the whole key
		{"x}{y}", "y"},            // a '}' before the '{' does not count
	}
	for _, p := range same {
		if a, b := HashSlot([]byte(p[0])), HashSlot([]byte(p[1])); a != b {
			t.Errorf("HashSlot(%q) = %d, HashSlot(%q) = %d: want equal", p[0], a, p[1], b)
		}
	}
	if string(HashTag([]byte("{}x"))) != "{}x" || string(HashTag([]byte("a{bc}d"))) != "bc" {
		t.Fatal("HashTag")
	}
}

func TestDefaultSlotsRanges(t *testing.T) {
	m := DefaultSlots(3)
	want := [][]SlotRange{{{0, 5460}}, {{5461, 10921}}, {{10922, 16383}}}
	for s := range 3 {
		got := m.Ranges(s)
		if len(got) != 1 || got[0] != want[s][0] {
			t.Errorf("shard %d: ranges %v, want %v", s, got, want[s])
		}
	}
	if r := DefaultSlots(1).Ranges(0); len(r) != 1 || r[0] != (SlotRange{0, NumSlots - 1}) {
		t.Fatalf("one shard: %v", r)
	}
}

func TestHexIDAndRaftAddr(t *testing.T) {
	h := HexID("n0")
	if len(h) != 40 || h != HexID("n0") || h == HexID("n1") {
		t.Fatalf("HexID: %q", h)
	}
	// sha1("abc"), a known vector.
	if HexID("abc") != "a9993e364706816aba3e25717850c26c9cd0d89d" {
		t.Fatal("HexID(abc) is not sha1")
	}
	if got := RaftAddr("127.0.0.1:7000"); got != "127.0.0.1:17000" {
		t.Fatalf("RaftAddr = %q", got)
	}
	if got := RaftAddr("[::1]:7000"); got != "[::1]:17000" {
		t.Fatalf("RaftAddr v6 = %q", got)
	}
	if RaftAddr("127.0.0.1:60000") != "" || RaftAddr("nope") != "" {
		t.Fatal("RaftAddr accepted an address without a raft port")
	}
}
