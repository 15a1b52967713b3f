// gocheck: the real implementations our formats must agree with, for tests.
//
//	gocheck hashzip FILE     print dirhash.HashZip(FILE, Hash1)
//	gocheck hashdir DIR      print dirhash.HashDir(DIR, "", Hash1)
//	gocheck hclparse FILE... exit 0 if HashiCorp's HCL parser accepts every file,
//	                         else print its diagnostics on stderr and exit 1
//
// Exit status 2 means bad usage. Built offline with Debian's Go in GOPATH mode.
package main

import (
	"fmt"
	"os"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"golang.org/x/mod/sumdb/dirhash"
)

func usage() {
	fmt.Fprintln(os.Stderr, "usage: gocheck hashzip FILE | hashdir DIR | hclparse FILE...")
	os.Exit(2)
}

func main() {
	if len(os.Args) < 3 {
		usage()
	}
	switch os.Args[1] {
	case "hashzip":
		printHash(dirhash.HashZip(os.Args[2], dirhash.Hash1))
	case "hashdir":
		printHash(dirhash.HashDir(os.Args[2], "", dirhash.Hash1))
	case "hclparse":
		parser := hclparse.NewParser()
		var diags hcl.Diagnostics
		for _, file := range os.Args[2:] {
			_, fileDiags := parser.ParseHCLFile(file)
			diags = append(diags, fileDiags...)
		}
		if len(diags) > 0 {
			writer := hcl.NewDiagnosticTextWriter(os.Stderr, parser.Files(), 100, false)
			writer.WriteDiagnostics(diags)
		}
		if diags.HasErrors() {
			os.Exit(1)
		}
	default:
		usage()
	}
}

func printHash(hash string, err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "gocheck:", err)
		os.Exit(1)
	}
	fmt.Println(hash)
}
