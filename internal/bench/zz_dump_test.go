package bench

import (
	"os"
	"testing"
)

func TestZZDump(t *testing.T) {
	r, err := Load(os.Getenv("ZZ_DIR"))
	if err != nil {
		t.Fatal(err)
	}
	r.Check("../..")
	os.WriteFile(os.Getenv("ZZ_OUT"), []byte(r.Markdown()+"\n=====\n"+r.Headline()), 0o644)
}
