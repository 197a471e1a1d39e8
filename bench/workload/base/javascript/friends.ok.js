const xs = require('fs').readFileSync(0, 'utf8').trim().split(/\s+/).map(Number);
// meeting at the middle friend costs max - min
console.log(Math.max(...xs) - Math.min(...xs));
