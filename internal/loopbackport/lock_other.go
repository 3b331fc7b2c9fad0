//go:build !unix

package loopbackport

import "os"

// tryLock: without flock, only the in-process set keeps ports apart.
func tryLock(*os.File) bool { return true }
