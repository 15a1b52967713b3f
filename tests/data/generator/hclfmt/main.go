// hclfmt FILE...: exits 1 and prints a diff-like report for each file that hclwrite.Format
// (what `tofu fmt` and `terraform fmt` run) would change. Built by tests/generator from
// Debian's golang-github-hashicorp-hcl-v2-dev (GOPATH mode, no network).
package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
)

func main() {
	failed := false
	for _, name := range os.Args[1:] {
		src, err := os.ReadFile(name)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		if _, diags := hclsyntax.ParseConfig(src, name, hcl.Pos{Line: 1, Column: 1}); diags.HasErrors() {
			fmt.Printf("%s: does not parse: %s\n", name, diags.Error())
			failed = true
			continue
		}
		formatted := hclwrite.Format(src)
		if !bytes.Equal(formatted, src) {
			failed = true
			a := strings.Split(string(src), "\n")
			b := strings.Split(string(formatted), "\n")
			for i := 0; i < len(a) || i < len(b); i++ {
				var x, y string
				if i < len(a) {
					x = a[i]
				}
				if i < len(b) {
					y = b[i]
				}
				if x != y {
					fmt.Printf("%s:%d:\n  have: %q\n  fmt:  %q\n", name, i+1, x, y)
					break
				}
			}
		}
	}
	if failed {
		os.Exit(1)
	}
}
