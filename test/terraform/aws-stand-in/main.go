package main

import (
	"context"
	"log"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
)

func main() {
	if err := providerserver.Serve(context.Background(), newProvider, providerserver.ServeOpts{Address: "registry.opentofu.org/hashicorp/aws"}); err != nil {
		log.Fatal(err)
	}
}
