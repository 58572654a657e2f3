package filter

import (
	"fmt"
	"math/rand"

	"github.com/RoaringBitmap/roaring/v2"
)

// assignment is the synthetic tenant and kind of every row, and each
// tenant's rows as a bitmap (the ground truth's allowed set in both modes).
type assignment struct {
	tenant   []*roaring.Bitmap // by tenant, Zipf-sized (tenantShares)
	tenantOf []uint16          // by row
	kindOf   []uint8           // by row
}

// assign draws the tenants (a random permutation cut into Zipf-sized
// pieces) and the kinds (uniform) of n rows from rng. Both modes call it
// with the same seeded source, so they assign the same rows alike, and the
// caller goes on drawing the queries' tenants and kinds from rng.
func assign(rng *rand.Rand, n, tenants, kinds int) *assignment {
	a := &assignment{
		tenant:   make([]*roaring.Bitmap, tenants),
		tenantOf: make([]uint16, n),
		kindOf:   make([]uint8, n),
	}
	perm := rng.Perm(n)
	next := 0
	for t, s := range tenantShares(tenants) {
		size := max(int(s*float64(n)+0.5), 1)
		a.tenant[t] = roaring.New()
		for _, r := range perm[next:min(next+size, n)] {
			a.tenant[t].Add(uint32(r))
			a.tenantOf[r] = uint16(t)
		}
		next = min(next+size, n)
	}
	// Rows left over by rounding go to the largest tenant.
	for _, r := range perm[next:] {
		a.tenant[0].Add(uint32(r))
		a.tenantOf[r] = 0
	}
	for r := range n {
		a.kindOf[r] = uint8(rng.Intn(kinds))
	}
	return a
}

// attrsOf is row's attributes as the attribute mode stores them.
func (a *assignment) attrsOf(row int) []byte {
	return fmt.Appendf(nil, `{"tenant":"t%d","kind":"k%d"}`, a.tenantOf[row], a.kindOf[row])
}
