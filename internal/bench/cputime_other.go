//go:build !unix

package bench

import "time"

// cpuTime is not measured here: the scanner benchmark reports no CPU rate.
func cpuTime() time.Duration { return 0 }
