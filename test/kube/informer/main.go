// Command informer is a client-go shared informer on the Outpost hub's placements
// (outpost.dev/v1alpha1), for test/k8s/kube-api-informer.test.ts: it lists and watches through
// the hub's Kubernetes API as any client-go controller (Argo CD, Flux) does, and prints each event
// its handlers get as one JSON line on stdout, then `{"event":"synced"}` once the first list is in.
//
//	informer --kubeconfig FILE --namespace NS
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

type line struct {
	Event           string `json:"event"`
	Name            string `json:"name,omitempty"`
	ResourceVersion string `json:"resourceVersion,omitempty"`
}

func emit(l line) {
	b, _ := json.Marshal(l)
	fmt.Println(string(b))
}

func of(obj interface{}) line {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return line{}
	}
	return line{Name: u.GetName(), ResourceVersion: u.GetResourceVersion()}
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "the kubeconfig outpost kubeconfig printed")
	namespace := flag.String("namespace", "default", "the project")
	flag.Parse()
	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubeconfig:", err)
		os.Exit(2)
	}
	client, err := dynamic.NewForConfig(config)
	if err != nil {
		fmt.Fprintln(os.Stderr, "client:", err)
		os.Exit(2)
	}
	placements := schema.GroupVersionResource{Group: "outpost.dev", Version: "v1alpha1", Resource: "placements"}
	// No resync: every line printed is an event the hub sent (or a relist made up).
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(client, 0, *namespace, nil)
	informer := factory.ForResource(placements).Informer()
	_, err = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) { l := of(obj); l.Event = "add"; emit(l) },
		UpdateFunc: func(_, obj interface{}) { l := of(obj); l.Event = "update"; emit(l) },
		DeleteFunc: func(obj interface{}) { l := of(obj); l.Event = "delete"; emit(l) },
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "handler:", err)
		os.Exit(2)
	}
	stop := make(chan struct{})
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
		<-sig
		close(stop)
	}()
	factory.Start(stop)
	if !cache.WaitForCacheSync(stop, informer.HasSynced) {
		os.Exit(1)
	}
	emit(line{Event: "synced"})
	<-stop
}
