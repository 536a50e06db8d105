// SPDX-License-Identifier: Apache-2.0
//
// A Go stress for husk (tests/integration/go.sh): goroutines marshalling and unmarshalling
// JSON (encoding/json's copies go through memmove, which keeps data in the AVX registers),
// timers and tickers, and a goroutine spinning in a loop without calls that only async
// preemption (a SIGURG sent to the thread, resumed from the signal frame) can stop for the
// garbage collector, and goroutines copying big buffers (memmove's AVX loops) while sysmon
// preempts them. Any register lost across a signal corrupts the data and is reported.
// Usage: gostress [ROUNDS]; prints "ok" and exits 0, or prints the first error and exits 1.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

type rec struct {
	Name  string            `json:"name"`
	Tags  []string          `json:"tags"`
	Attrs map[string]string `json:"attrs"`
	N     []int             `json:"n"`
}

func worker(g, rounds int) error {
	for i := 0; i < rounds; i++ {
		r := rec{Name: strings.Repeat(fmt.Sprintf("g%d-i%d-", g, i), 20), Attrs: map[string]string{}}
		for j := 0; j < 20; j++ {
			r.Tags = append(r.Tags, strings.Repeat(string(rune('a'+j)), 40+j))
			r.Attrs[fmt.Sprint("k", j)] = strings.Repeat("v", 100+j+i%7)
			r.N = append(r.N, i*j)
		}
		b, err := json.Marshal(&r)
		if err != nil {
			return err
		}
		var r2 rec
		if err := json.Unmarshal(b, &r2); err != nil {
			return fmt.Errorf("goroutine %d round %d: %v", g, i, err)
		}
		if r2.Name != r.Name || len(r2.Tags) != len(r.Tags) || r2.Attrs["k7"] != r.Attrs["k7"] ||
			r2.Tags[19] != r.Tags[19] || r2.N[19] != r.N[19] {
			return fmt.Errorf("goroutine %d round %d: data differs after a round trip", g, i)
		}
	}
	return nil
}

// copier moves a 1 MiB buffer back and forth with copy (memmove: AVX loops for big moves) and
// compares with bytes.Equal (AVX2 too), long enough for sysmon to preempt it mid-copy.
func copier(c, rounds int) error {
	src := make([]byte, 1<<20)
	for i := range src {
		src[i] = byte(i*7 + c + i>>12)
	}
	dst := make([]byte, len(src))
	tmp := make([]byte, len(src))
	for i := 0; i < rounds; i++ {
		copy(tmp, src)
		copy(dst[i%64:], tmp[:len(tmp)-64])
		if !bytes.Equal(dst[i%64:i%64+len(src)-64], src[:len(src)-64]) {
			for j := range src[:len(src)-64] {
				if dst[i%64+j] != src[j] {
					return fmt.Errorf("copier %d round %d: byte %d is %#x, want %#x", c, i, j,
						dst[i%64+j], src[j])
				}
			}
			return fmt.Errorf("copier %d round %d: buffers differ", c, i)
		}
	}
	return nil
}

//go:noinline
func spin(stop *int32) uint64 {
	var x uint64
	for atomic.LoadInt32(stop) == 0 {
		for i := uint64(0); i < 1000000; i++ {
			x += i * i
		}
	}
	return x
}

func main() {
	rounds := 600
	if len(os.Args) > 1 {
		if n, err := strconv.Atoi(os.Args[1]); err == nil && n > 0 {
			rounds = n
		}
	}
	var stop int32
	spun := make(chan uint64)
	go func() { spun <- spin(&stop) }()

	var ticks int64
	ticker := time.NewTicker(time.Millisecond)
	tickDone := make(chan struct{})
	go func() {
		for {
			select {
			case <-ticker.C:
				atomic.AddInt64(&ticks, 1)
			case <-tickDone:
				return
			}
		}
	}()
	var fired int32
	time.AfterFunc(5*time.Millisecond, func() { atomic.StoreInt32(&fired, 1) })

	var wg sync.WaitGroup
	errs := make(chan error, 12)
	for c := 0; c < 4; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			if err := copier(c, rounds/2); err != nil {
				errs <- err
			}
		}(c)
	}
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			if err := worker(g, rounds); err != nil {
				errs <- err
			}
		}(g)
	}
	// The collector must stop the spinning goroutine: only async preemption can.
	for i := 0; i < 3; i++ {
		runtime.GC()
	}
	wg.Wait()
	atomic.StoreInt32(&stop, 1)
	<-spun
	for atomic.LoadInt32(&fired) == 0 {
		time.Sleep(time.Millisecond)
	}
	ticker.Stop()
	close(tickDone)
	close(errs)
	for e := range errs {
		fmt.Println("ERROR", e)
		os.Exit(1)
	}
	if atomic.LoadInt64(&ticks) == 0 {
		fmt.Println("ERROR the ticker never ticked")
		os.Exit(1)
	}
	fmt.Println("ok")
}
