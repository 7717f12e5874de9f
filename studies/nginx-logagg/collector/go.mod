module bridgebench/nginx-logagg/collector

go 1.21
