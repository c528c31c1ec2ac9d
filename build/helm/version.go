package main

// helmVersion is the helm.sh/helm/v4 release go.mod pins; build.sh checks they agree.
const helmVersion = "v4.3.2"
