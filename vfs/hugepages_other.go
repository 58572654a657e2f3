//go:build !linux

package vfs

func adviseHugePages([]byte) {}
