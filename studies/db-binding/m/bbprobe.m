bbprobe ; the m-native mechanism: count the first PARAM nodes of ^BCAT("lvd",*) with $ORDER, ITERATIONS
 ; times, each timed with $ZUT (microseconds); print the bridgebench/1 line. Command line: ITERATIONS PARAM
 new iters,limit,i,t0,t1,times,c,s,x,answer
 set iters=+$piece($zcmdline," ",1),limit=+$piece($zcmdline," ",2)
 set times=""
 for i=1:1:iters do
 . set t0=$zut
 . set (c,s)=0,x=""
 . for  set x=$order(^BCAT("lvd",x)) quit:x=""  set c=c+1,s=s+x quit:c=limit
 . set t1=$zut
 . set times=times_$select(i>1:",",1:"")_$justify((t1-t0)/1000000,0,6)
 . if i=1 set answer=c_" "_s
 . if answer'=(c_" "_s) write "answers differ between iterations",! zhalt 1
 write "{""protocol"": ""bridgebench/1"", ""times"": ["_times_"], ""answer"": """_answer_""", ""vm"": ""GT.M "_$zversion_""", ""clock"": ""$ZUT""}",!
 quit
