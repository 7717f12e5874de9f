module bridgebench/loaddriver

go 1.24

require github.com/HdrHistogram/hdrhistogram-go v1.4.0
