bbfill ; the study's data: ^BCAT("lvd",i)=3*i for i=1..n, n from the command line
fill new i,n
 set n=+$zcmdline
 kill ^BCAT,^BBSET
 for i=1:1:n set ^BCAT("lvd",i)=3*i
 write "filled ^BCAT(""lvd"",1.."_n_")",!
 quit
