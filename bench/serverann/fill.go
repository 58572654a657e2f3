package serverann

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// fp32 encodes v as MEM.ADD's FP32 blob: little-endian float32s.
func fp32(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// fill adds base row r as memory id r (MEM.ADD coll FP32 blob ID r) over
// conns connections, each sending pipeline adds at a time and then reading
// their replies; rows are handed out in batches of pipeline. It returns the
// time taken. Every reply must be the id sent.
func fill(addr, coll string, base []float32, dim, conns, pipeline int, progress func(done int)) (time.Duration, error) {
	n := len(base) / dim
	var next, done atomic.Int64
	var firstErr error
	var errOnce sync.Once
	var failed atomic.Bool // firstErr is set
	fail := func(err error) {
		errOnce.Do(func() { firstErr = err })
		failed.Store(true)
	}
	start := time.Now()
	var wg sync.WaitGroup
	for range conns {
		c, err := dial(addr)
		if err != nil {
			return 0, err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.close()
			cmd, collB, fp, idB := []byte("MEM.ADD"), []byte(coll), []byte("FP32"), []byte("ID")
			blob := make([]byte, 4*dim)
			for !failed.Load() {
				from := int(next.Add(int64(pipeline))) - pipeline
				if from >= n {
					return
				}
				to := min(from+pipeline, n)
				for r := from; r < to; r++ {
					for j, x := range base[r*dim : (r+1)*dim] {
						binary.LittleEndian.PutUint32(blob[4*j:], math.Float32bits(x))
					}
					c.send(cmd, collB, fp, blob, idB, []byte(strconv.Itoa(r)))
				}
				if err := c.flush(); err != nil {
					fail(err)
					return
				}
				for r := from; r < to; r++ {
					reply, err := c.read()
					if err != nil {
						fail(fmt.Errorf("MEM.ADD of row %d: %w", r, err))
						return
					}
					if id, ok := reply.(int64); !ok || id != int64(r) {
						fail(fmt.Errorf("MEM.ADD of row %d replied %v, want %d", r, reply, r))
						return
					}
				}
				if d := done.Add(int64(to - from)); progress != nil {
					progress(int(d))
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return 0, firstErr
	}
	return time.Since(start), nil
}
