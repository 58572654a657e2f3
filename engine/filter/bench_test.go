package filter

import "testing"

// benchAttrs is a typical 150-byte attributes object.
const benchAttrs = `{"task_id":"t-4f2a91c3","user":"u7","session":"s-20261130-0042","step":4,` +
	`"success":true,"tags":["explore","plan","act"],"q_updated_at":1764547200}`

// BenchmarkMatch: go test -run '^$' -bench Match -benchmem ./engine/filter/
func BenchmarkMatch(b *testing.B) {
	e, err := Parse(`.user == "u7" and .step >= 3 and "plan" in .tags`)
	if err != nil {
		b.Fatal(err)
	}
	attrs := []byte(benchAttrs)
	if len(attrs) < 140 || len(attrs) > 160 || !e.Match(attrs) {
		b.Fatalf("benchmark object: %d bytes, match %v", len(attrs), e.Match(attrs))
	}
	b.ReportAllocs()
	for b.Loop() {
		if !e.Match(attrs) {
			b.Fatal("no match")
		}
	}
}

// BenchmarkMatchMiss: the same expression on an object whose first field
// already fails (the common case of a filter on a big collection).
func BenchmarkMatchMiss(b *testing.B) {
	e, err := Parse(`.user == "u8" and .step >= 3 and "plan" in .tags`)
	if err != nil {
		b.Fatal(err)
	}
	attrs := []byte(benchAttrs)
	b.ReportAllocs()
	for b.Loop() {
		if e.Match(attrs) {
			b.Fatal("match")
		}
	}
}

func BenchmarkParse(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(`.user == "u7" and .step >= 3 and "plan" in .tags`); err != nil {
			b.Fatal(err)
		}
	}
}
